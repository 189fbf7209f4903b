package dev.prefixrouter.vllm;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The counters of a {@link KvEventSubscriber}; written by its two threads, read through {@link
 * KvEventSubscriber#stats()} as a {@link Snapshot}. Thread-safe.
 */
public final class KvEventStats {
  final LongAdder messages = new LongAdder();
  final LongAdder garbageMessages = new LongAdder();
  final LongAdder batches = new LongAdder();
  final LongAdder events = new LongAdder();
  final LongAdder gaps = new LongAdder();
  final LongAdder replays = new LongAdder();
  final LongAdder replayedBatches = new LongAdder();
  final LongAdder replayFailures = new LongAdder();
  final LongAdder restarts = new LongAdder();
  final LongAdder duplicates = new LongAdder();
  final LongAdder decodeErrors = new LongAdder();
  final LongAdder unknownEventTypes = new LongAdder();
  final LongAdder unknownFields = new LongAdder();
  final LongAdder malformedEvents = new LongAdder();
  final LongAdder skippedGroups = new LongAdder();
  final LongAdder skippedVariants = new LongAdder();
  final LongAdder markedUnknown = new LongAdder();
  final LongAdder queueFullWaits = new LongAdder();
  final LongAdder idleReconnects = new LongAdder();
  final LongAdder handshakeReconnects = new LongAdder();
  final LongAdder replayRetries = new LongAdder();
  final LongAdder appliedBatches = new LongAdder();
  final LongAdder appliedEvents = new LongAdder();
  final LongAdder applyErrors = new LongAdder();
  final LongAdder unknownBackend = new LongAdder();
  final LongAdder ioFailures = new LongAdder();
  final LongAdder staleBatches = new LongAdder();
  private final AtomicLong lastLagMillis = new AtomicLong(-1);
  private volatile int endpoints;

  KvEventStats() {}

  void count(KvEventDecoder.Batch b) {
    batches.increment();
    events.add(b.events().size());
    unknownEventTypes.add(b.unknownEventTypes());
    unknownFields.add(b.unknownFields());
    malformedEvents.add(b.malformedEvents());
    skippedGroups.add(b.skippedGroups());
    skippedVariants.add(b.skippedVariants());
  }

  void applied(int eventCount, double timestampSeconds) {
    appliedBatches.increment();
    appliedEvents.add(eventCount);
    if (timestampSeconds > 0) {
      lastLagMillis.set(System.currentTimeMillis() - (long) (timestampSeconds * 1000));
    }
  }

  void endpoints(int n) {
    endpoints = n;
  }

  Snapshot snapshot(int queued) {
    return new Snapshot(
        endpoints,
        messages.sum(),
        garbageMessages.sum(),
        batches.sum(),
        events.sum(),
        gaps.sum(),
        replays.sum(),
        replayedBatches.sum(),
        replayFailures.sum(),
        restarts.sum(),
        duplicates.sum(),
        decodeErrors.sum(),
        unknownEventTypes.sum(),
        unknownFields.sum(),
        malformedEvents.sum(),
        skippedGroups.sum(),
        skippedVariants.sum(),
        markedUnknown.sum(),
        queued,
        queueFullWaits.sum(),
        idleReconnects.sum(),
        handshakeReconnects.sum(),
        replayRetries.sum(),
        appliedBatches.sum(),
        appliedEvents.sum(),
        applyErrors.sum(),
        unknownBackend.sum(),
        ioFailures.sum(),
        staleBatches.sum(),
        lastLagMillis.get());
  }

  /**
   * The counters of a {@link KvEventSubscriber}, cumulative since it was built.
   *
   * @param endpoints endpoints subscribed now
   * @param messages messages received on the live streams
   * @param garbageMessages messages (live or replayed) that are not {@code [topic, 8-byte seq,
   *     payload]}
   * @param batches batches decoded (live and replayed)
   * @param events events decoded and kept
   * @param gaps sequence gaps seen
   * @param replays replay requests sent (gaps, joins, restarts)
   * @param replayedBatches batches received through replays
   * @param replayFailures gaps a replay could not fill
   * @param restarts engines seen restarting (seq going back)
   * @param duplicates live batches already delivered by a replay
   * @param decodeErrors payloads that were not an {@code EventBatch}
   * @param unknownEventTypes events of an unknown type, skipped
   * @param unknownFields fields not known, skipped
   * @param malformedEvents events with a field of the wrong type or inconsistent lengths, skipped
   * @param skippedGroups events of a KV-cache group that is not full attention, skipped
   * @param skippedVariants stores with extra keys other than an adapter name and a salt (or of an
   *     adapter without lora_name), skipped
   * @param markedUnknown times a backend's confirmed state was dropped (failed replay, restart,
   *     undecodable batch)
   * @param queued batches waiting for the apply thread now
   * @param queueFullWaits times the I/O thread waited 100 ms for room in the queue
   * @param idleReconnects SUB sockets replaced after a silence of {@code idleReconnect}
   * @param handshakeReconnects SUB sockets replaced for not completing the ZMTP greeting within
   *     their deadline ({@code handshakeTimeout}, doubling while an engine stays unreachable): a
   *     stalled connection, or an engine that is down or whose host does not resolve
   * @param replayRetries replay requests sent again on a new connection after half the remaining
   *     time passed without any answer (while a new connection would still get 100 ms)
   * @param appliedBatches batches handed to the sink
   * @param appliedEvents events handed to the sink
   * @param applyErrors batches whose sink call threw
   * @param unknownBackend batches the sink refused (no such backend)
   * @param ioFailures sockets that could not be created (out of file descriptors, JeroMQ's socket
   *     cap) and other failed steps of the I/O thread; the endpoint concerned is retried with
   *     backoff (a replay without its socket fails), the other endpoints go on
   * @param staleBatches batches dropped unapplied because their backend was unsubscribed after they
   *     were read (a backend removed and added again gets none of its old endpoints' batches)
   * @param lastLagMillis wall-clock age of the last applied batch (engine timestamp to apply), -1
   *     before the first; includes any clock skew between the hosts
   */
  public record Snapshot(
      int endpoints,
      long messages,
      long garbageMessages,
      long batches,
      long events,
      long gaps,
      long replays,
      long replayedBatches,
      long replayFailures,
      long restarts,
      long duplicates,
      long decodeErrors,
      long unknownEventTypes,
      long unknownFields,
      long malformedEvents,
      long skippedGroups,
      long skippedVariants,
      long markedUnknown,
      int queued,
      long queueFullWaits,
      long idleReconnects,
      long handshakeReconnects,
      long replayRetries,
      long appliedBatches,
      long appliedEvents,
      long applyErrors,
      long unknownBackend,
      long ioFailures,
      long staleBatches,
      long lastLagMillis) {}
}
