package dev.prefixrouter.api.spi;

import java.util.concurrent.atomic.AtomicInteger;

/** Fewest open leases per unit of weight; exact ties rotate. */
final class LeastInFlightScorer implements Scorer {
  private final AtomicInteger rotation = new AtomicInteger();

  @Override
  public String name() {
    return "least-in-flight";
  }

  @Override
  public void score(ScoringContext ctx) {
    int n = ctx.size();
    for (int i = 0; i < n; i++) {
      ctx.setCost(i, ctx.inFlight(i) / ctx.backend(i).weight());
    }
    ctx.sortByCost(rotation.getAndIncrement());
    if (n > 0) {
      ctx.setReason("least-in-flight: " + ctx.inFlight(ctx.order()[0]) + " in flight");
    }
  }

  @Override
  public String toString() {
    return "Scorer.leastInFlight()";
  }
}
