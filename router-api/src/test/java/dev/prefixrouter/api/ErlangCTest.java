package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ErlangCTest {

  /** Erlang C from its textbook form (factorial sums), for small c only. */
  private static double textbook(int c, double a) {
    double sum = 0;
    double term = 1;
    for (int k = 0; k < c; k++) {
      sum += term;
      term *= a / (k + 1);
    }
    double last = term * c / (c - a); // a^c/c! · c/(c−a)
    return last / (sum + last);
  }

  @Test
  void waitProbabilityMatchesTheTextbookFormula() {
    assertThat(ErlangC.waitProbability(1, 0.5)).isCloseTo(0.5, within(1e-12)); // M/M/1: ρ
    assertThat(ErlangC.waitProbability(2, 1.0)).isCloseTo(1.0 / 3, within(1e-12));
    for (int c = 1; c <= 30; c++) {
      for (double a : new double[] {0.1, c * 0.5, c * 0.9, c * 0.99}) {
        assertThat(ErlangC.waitProbability(c, a)).isCloseTo(textbook(c, a), within(1e-9));
      }
    }
    assertThat(ErlangC.waitProbability(3, 3.0)).isEqualTo(1.0);
    assertThat(ErlangC.waitProbability(4, 0)).isZero();
  }

  @Test
  void largePoolsStayFinite() {
    double c = ErlangC.waitProbability(10_000, 9_900);
    assertThat(c).isBetween(0.0, 1.0);
    assertThat(ErlangC.serversFor(9_000, 1.0, 1.1, 0.95).orElseThrow()).isBetween(9_001, 9_300);
  }

  /** An M/M/c FCFS queue simulated: the share of arrivals that wait longer than {@code t}. */
  private static double simulated(int c, double lambda, double s, double wait, long seed) {
    SplittableRandom rnd = new SplittableRandom(seed);
    double[] free = new double[c];
    int n = 400_000;
    int over = 0;
    double t = 0;
    for (int i = 0; i < n; i++) {
      t += -Math.log(1 - rnd.nextDouble()) / lambda;
      int k = 0;
      for (int j = 1; j < c; j++) {
        if (free[j] < free[k]) {
          k = j;
        }
      }
      double start = Math.max(t, free[k]);
      free[k] = start - Math.log(1 - rnd.nextDouble()) * s;
      if (start - t > wait) {
        over++;
      }
    }
    return (double) over / n;
  }

  @Test
  void waitQuantileMatchesASimulatedQueue() {
    for (int c : new int[] {1, 3, 8}) {
      for (double rho : new double[] {0.6, 0.85}) {
        double s = 0.04;
        double lambda = rho * c / s;
        double model = ErlangC.waitQuantile(c, lambda, s, 0.95);
        double share = simulated(c, lambda, s, model, 7);
        assertThat(share).as("c=%d rho=%.2f", c, rho).isCloseTo(0.05, within(0.004));
        assertThat(ErlangC.waitExceedance(c, lambda, s, model)).isCloseTo(0.05, within(1e-9));
      }
    }
    // few wait: the 95th percentile wait is 0
    assertThat(ErlangC.waitQuantile(8, 10, 0.04, 0.95)).isZero();
  }

  @Test
  void serversForIsTheSmallestCountThatMeetsTheObjective() {
    double lambda = 60;
    double s = 0.05;
    int c = ErlangC.serversFor(lambda, s, 0.3, 0.95).orElseThrow();
    assertThat(s + ErlangC.waitQuantile(c, lambda, s, 0.95)).isLessThanOrEqualTo(0.3);
    assertThat(s + ErlangC.waitQuantile(c - 1, lambda, s, 0.95)).isGreaterThan(0.3);
    assertThat(c).isGreaterThan(3); // offered load is 3 Erlangs
    assertThat(ErlangC.serversFor(0, s, 0.3, 0.95)).hasValue(0);
  }

  @Test
  void anObjectiveTheServiceTimeAloneMissesIsUnreachable() {
    assertThat(ErlangC.serversFor(1, 0.1001, 0.1, 0.95)).isEmpty();
    assertThat(ErlangC.serversFor(1, 0.1, 0.1, 0.95)).isNotEmpty(); // no wait at all is enough
  }

  @Test
  void rejectsBadInput() {
    assertThatThrownBy(() -> ErlangC.waitProbability(0, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("servers");
    assertThatThrownBy(() -> ErlangC.waitExceedance(1, Double.NaN, 1, 1))
        .hasMessageContaining("arrivalsPerSecond");
    assertThatThrownBy(() -> ErlangC.serversFor(1, 0, 1, 0.9))
        .hasMessageContaining("serviceSeconds");
    assertThatThrownBy(() -> ErlangC.serversFor(1, 1, 1, 1.0)).hasMessageContaining("percentile");
    assertThatThrownBy(() -> ErlangC.waitQuantile(1, 1, 1, 0)).hasMessageContaining("percentile");
  }
}
