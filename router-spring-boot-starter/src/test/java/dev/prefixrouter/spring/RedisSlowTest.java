package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.redis.RedisMembershipSync;
import dev.prefixrouter.redis.RedisPredictionSharing;
import dev.prefixrouter.redis.RedisSessionPins;
import dev.prefixrouter.redis.RedisTenantLimiter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A slow Redis: two replicas (two contexts) share everything through the test's own redis-server,
 * which the test freezes with SIGSTOP for a few seconds under routing load and thaws with SIGCONT
 * (by its PID; the shared instance is never touched). While it is frozen no {@code route()} waits
 * on it: the slowest route stays far below the command timeout (2 s, the time a route that waited
 * on a Redis command would take), none throws or is rejected; each part goes down once and up once
 * (health details, the {@code prefixrouter.redis.up} gauge and transitions, one WARN and one INFO
 * line per part and replica); a drain made on A while Redis is frozen reaches B after, and
 * predictions flow again. Bounded: about 10 s, each wait at most 20 s.
 */
@Tag("stress")
class RedisSlowTest {
  private static final String[] PARTS = {"predictions", "membership", "session-pins", "quotas"};

  @Test
  void aFrozenRedisNeverBlocksRoutingAndEveryPartRecovers() throws Exception {
    try (FrozenRedis redis = new FrozenRedis()) {
      ApplicationContextRunner replica =
          new ApplicationContextRunner()
              .withConfiguration(
                  AutoConfigurations.of(
                      PrefixRouterAutoConfiguration.class, RedisAutoConfiguration.class))
              .withPropertyValues(
                  "prefix-router.backends[0].id=b0",
                  "prefix-router.backends[0].models=m",
                  "prefix-router.backends[1].id=b1",
                  "prefix-router.backends[1].models=m",
                  "prefix-router.limiter.tokens-per-minute=100000000",
                  "prefix-router.redis.enabled=true",
                  "prefix-router.redis.uri=redis://127.0.0.1:" + redis.port,
                  "prefix-router.redis.key-prefix=slow-test:",
                  "prefix-router.redis.share-quotas=true",
                  "prefix-router.redis.expected-replicas=2",
                  "prefix-router.redis.command-timeout=2s",
                  "prefix-router.redis.retry-interval=50ms");
      replica.run(a -> replica.run(b -> run(redis, a, b)));
    }
  }

  private static void run(
      FrozenRedis redis, AssertableApplicationContext a, AssertableApplicationContext b)
      throws Exception {
    RoutingEngine ea = a.getBean(RoutingEngine.class);
    RoutingEngine eb = b.getBean(RoutingEngine.class);
    await(() -> allUp(a) && allUp(b));
    MeterRegistry meters = new SimpleMeterRegistry();
    a.getBean("prefixRouterRedisMeters", MeterBinder.class).bindTo(meters);
    HealthIndicator health = a.getBean("prefixRouterRedisHealthIndicator", HealthIndicator.class);
    assertThat(health.health().getDetails().values()).containsOnly("shared");
    double[] transitionsBefore = new double[PARTS.length];
    for (int i = 0; i < PARTS.length; i++) {
      transitionsBefore[i] = transitions(meters, PARTS[i]);
    }

    Logger redisLog = (Logger) LoggerFactory.getLogger("dev.prefixrouter.redis");
    ListAppender<ILoggingEvent> lines = new ListAppender<>();
    lines.start();
    redisLog.addAppender(lines);

    // phase 0: Redis answers; 1: frozen; 2: thawed
    AtomicLongArray maxNanos = new AtomicLongArray(3);
    AtomicLongArray routes = new AtomicLongArray(3);
    LongAdder notRouted = new LongAdder();
    AtomicReference<RouteDecision> firstNotRouted = new AtomicReference<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicInteger phase = new AtomicInteger();
    Thread load =
        new Thread(
            () -> {
              SplittableRandom rnd = new SplittableRandom(3);
              for (long i = 0; !stop.get(); i++) {
                int p = phase.get();
                RouteRequest r = request(rnd, "s" + (i % 64));
                long t0 = System.nanoTime();
                try {
                  RouteDecision d = ((i & 1) == 0 ? ea : eb).route(r);
                  long took = System.nanoTime() - t0;
                  maxNanos.accumulateAndGet(p, took, Math::max);
                  routes.incrementAndGet(p);
                  if (d instanceof Routed routed) {
                    routed.lease().complete(Usage.of(routed.promptTokens(), 1));
                  } else {
                    firstNotRouted.compareAndSet(null, d);
                    notRouted.increment();
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
                LockSupport.parkNanos(200_000); // about 4k routes/s: leave the 2 cores room
              }
            },
            "slow-test-load");
    load.start();
    try {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(300));
      redis.signal("STOP");
      phase.set(1);
      await(() -> noneUp(a) && noneUp(b)); // each part's next command timed out (2 s)
      assertThat(health.health().getDetails())
          .containsEntry("predictions", "local only")
          .containsEntry("membership", "local only")
          .containsEntry("sessionPins", "local only")
          .containsEntry("quotas", "local share");
      for (String part : PARTS) {
        assertThat(meters.get("prefixrouter.redis.up").tag("part", part).gauge().value())
            .as(part)
            .isZero();
      }
      ea.backends().drain("b0"); // while frozen: must reach B after
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(500));
      redis.signal("CONT");
      phase.set(2);
      await(() -> allUp(a) && allUp(b));
      await(() -> draining(eb, "b0"));
      long applied = b.getBean(RedisPredictionSharing.class).stats().applied();
      await(() -> b.getBean(RedisPredictionSharing.class).stats().applied() > applied);
    } finally {
      stop.set(true);
      load.join(TimeUnit.SECONDS.toMillis(10));
      redisLog.detachAppender(lines);
    }

    System.out.printf(
        "RedisSlowTest: routes %d/%d/%d, slowest %.2f/%.2f/%.2f ms (answering/frozen/thawed)%n",
        routes.get(0),
        routes.get(1),
        routes.get(2),
        maxNanos.get(0) / 1e6,
        maxNanos.get(1) / 1e6,
        maxNanos.get(2) / 1e6);
    assertThat(failure.get()).as("a route threw").isNull();
    assertThat(notRouted.sum()).as("routes not routed, first %s", firstNotRouted.get()).isZero();
    assertThat(routes.get(1)).as("routes while frozen").isGreaterThan(100);
    assertThat(maxNanos.get(1))
        .as(
            "slowest route while Redis was frozen (ms); before %.1f ms, after %.1f ms",
            maxNanos.get(0) / 1e6, maxNanos.get(2) / 1e6)
        .isLessThan(TimeUnit.MILLISECONDS.toNanos(1500)); // a wait on Redis would be 2 s
    assertThat(health.health().getDetails().values()).containsOnly("shared");
    for (int i = 0; i < PARTS.length; i++) {
      assertThat(transitions(meters, PARTS[i]) - transitionsBefore[i])
          .as("transitions of %s", PARTS[i])
          .isEqualTo(2.0);
    }
    long warns = lines.list.stream().filter(e -> e.getLevel() == Level.WARN).count();
    long infos =
        lines.list.stream()
            .filter(
                e -> e.getLevel() == Level.INFO && e.getFormattedMessage().contains("reachable"))
            .count();
    assertThat(warns).as("one WARN per part and replica: %s", lines.list).isEqualTo(8);
    assertThat(infos).as("one INFO per part and replica: %s", lines.list).isEqualTo(8);
  }

  private static RouteRequest request(SplittableRandom rnd, String session) {
    int[] tokens = new int[64 + rnd.nextInt(128)];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = i < 32 ? i : rnd.nextInt(50_000); // a shared 2-block head, then fresh blocks
    }
    return RouteRequest.builder("t", "m")
        .prompt(Prompt.ofTokens(tokens))
        .maxOutputTokens(1)
        .session(session)
        .build();
  }

  private static boolean allUp(AssertableApplicationContext c) {
    return c.getBean(RedisPredictionSharing.class).redisUp()
        && c.getBean(RedisMembershipSync.class).redisUp()
        && c.getBean(RedisSessionPins.class).redisUp()
        && c.getBean(RedisTenantLimiter.class).redisUp();
  }

  private static boolean noneUp(AssertableApplicationContext c) {
    return !c.getBean(RedisPredictionSharing.class).redisUp()
        && !c.getBean(RedisMembershipSync.class).redisUp()
        && !c.getBean(RedisSessionPins.class).redisUp()
        && !c.getBean(RedisTenantLimiter.class).redisUp();
  }

  private static double transitions(MeterRegistry r, String part) {
    return r.get("prefixrouter.redis.transitions").tag("part", part).functionCounter().count();
  }

  private static boolean draining(RoutingEngine e, String id) {
    return e.inspect().backends().stream()
        .filter(x -> x.backend().id().equals(id))
        .anyMatch(BackendSnapshot::draining);
  }

  /** Polls what Redis and the workers make true, at most 20 s. */
  private static void await(BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline).as("condition not met within 20 s").isNegative();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
    }
  }

  /** The test's own redis-server on a free port, frozen and thawed by signals to its PID. */
  private static final class FrozenRedis implements AutoCloseable {
    final int port;
    private final Process process;

    FrozenRedis() throws IOException {
      try (ServerSocket s = new ServerSocket(0)) {
        this.port = s.getLocalPort();
      }
      this.process =
          new ProcessBuilder(
                  "redis-server",
                  "--port",
                  Integer.toString(port),
                  "--bind",
                  "127.0.0.1",
                  "--save",
                  "",
                  "--appendonly",
                  "no")
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .start();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!answersPing()) {
        if (!process.isAlive() || System.nanoTime() - deadline > 0) {
          process.destroyForcibly();
          throw new IOException("redis-server on port " + port + " did not start");
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
      }
    }

    /** Sends SIGSTOP or SIGCONT to this server only. */
    void signal(String name) throws IOException, InterruptedException {
      Process kill =
          new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
      assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
      assertThat(kill.exitValue()).as("kill -%s", name).isZero();
    }

    private boolean answersPing() {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        s.setSoTimeout(500);
        OutputStream out = s.getOutputStream();
        out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
        out.flush();
        InputStream in = s.getInputStream();
        byte[] buf = new byte[7];
        int n = in.readNBytes(buf, 0, 7);
        return new String(buf, 0, n, StandardCharsets.US_ASCII).equals("+PONG\r\n");
      } catch (IOException e) {
        return false;
      }
    }

    @Override
    public void close() throws IOException {
      try {
        signal("CONT"); // a stopped process dies on SIGKILL too, but leave nothing frozen
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }
}
