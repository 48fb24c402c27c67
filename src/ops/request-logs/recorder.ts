/**
 * The request log's writer (decision 0130): the envelope middleware offers each entry without
 * waiting; a background fiber writes what has gathered in one multi-row INSERT every second, or
 * as soon as a batch is full. The buffer is bounded: while the database does not take batches the
 * oldest entries are dropped and counted (`svc.request_log.dropped`), since the log is best-effort
 * and must never slow or fail the requests it describes. A batch that fails with a defect rather
 * than a database error is dropped and counted the same way, and the writer goes on. What is
 * buffered is written on shutdown.
 */
import { Duration, Effect, Latch, Layer, Metric } from "effect"
import { type RequestLogEntry, RequestLogSink } from "../../kernel/request-log.ts"
import { requestLogDropped } from "../../platform/metrics.ts"
import { RequestLogsRepo } from "./repo.ts"

export interface RequestLogRecorderOptions {
  /** The longest an entry waits for its batch. */
  readonly flushEvery: Duration.Input
  /** Rows per INSERT; a full batch is written at once. */
  readonly batchSize: number
  /** Entries held at most; beyond it the oldest go. */
  readonly capacity: number
  /** How long the shutdown flush may take. */
  readonly shutdownFlushWithin: Duration.Input
}

export const defaultRecorderOptions: RequestLogRecorderOptions = {
  flushEvery: "1 second",
  batchSize: 500,
  capacity: 10_000,
  shutdownFlushWithin: "5 seconds"
}

/** How long the writer waits after a failed batch before it tries again. */
const RETRY_AFTER = Duration.seconds(1)

export const requestLogRecorder = (options: RequestLogRecorderOptions = defaultRecorderOptions) =>
  Layer.effect(RequestLogSink)(Effect.gen(function*() {
    const repo = yield* RequestLogsRepo
    const buffer: Array<RequestLogEntry> = []
    const batchReady = Latch.makeUnsafe(false)
    let droppedSinceReport = 0

    const dropOverflow = () => {
      const over = buffer.length - options.capacity
      if (over > 0) {
        buffer.splice(0, over)
        droppedSinceReport += over
      }
    }

    const offer = (entry: RequestLogEntry) => {
      buffer.push(entry)
      dropOverflow()
      if (buffer.length >= options.batchSize) batchReady.openUnsafe()
    }

    // The INSERT is uninterruptible: stopping the writer waits for a batch under way rather than lose it.
    const writeBatch = Effect.suspend(() => {
      const batch = buffer.splice(0, options.batchSize)
      if (batch.length === 0) return Effect.void
      return Effect.uninterruptible(Effect.suspend(() => repo.insert(batch))).pipe(
        Effect.tapError(() =>
          Effect.sync(() => {
            // Back in front (they are older than what arrived meanwhile), then the bound again.
            buffer.unshift(...batch)
            dropOverflow()
          })
        ),
        // A defect (a batch the driver or the code cannot take) would fail again on every retry and
        // end the writer: the batch is dropped and counted, and the writer goes on with the next.
        Effect.catchDefect((defect) =>
          Effect.sync(() => {
            droppedSinceReport += batch.length
          }).pipe(Effect.andThen(Effect.logError("request log batch dropped: it cannot be written", defect)))
        )
      )
    })

    const drain = Effect.whileLoop({
      while: () => buffer.length > 0,
      body: () => writeBatch,
      step: () => undefined
    })

    const reportDrops = Effect.suspend(() => {
      const dropped = droppedSinceReport
      droppedSinceReport = 0
      return dropped === 0 ? Effect.void : Metric.update(requestLogDropped, dropped)
    })

    let failing = false
    const cycle = Effect.raceFirst(batchReady.await, Effect.sleep(options.flushEvery)).pipe(
      Effect.andThen(Effect.sync(() => batchReady.closeUnsafe())),
      Effect.andThen(drain),
      Effect.tap(() => Effect.sync(() => { failing = false })),
      Effect.catch((error) => {
        // One warning per outage, not one per second.
        const warn = failing ? Effect.void : Effect.logWarning("request log batch not written; kept in memory and retried", error)
        failing = true
        return Effect.andThen(warn, Effect.sleep(RETRY_AFTER))
      }),
      Effect.andThen(reportDrops)
    )

    // Added before the writer is forked, so it runs after the writer stopped: what is left is written once more.
    yield* Effect.addFinalizer(() =>
      drain.pipe(
        Effect.andThen(reportDrops),
        Effect.timeoutOption(options.shutdownFlushWithin),
        Effect.catch((error) => Effect.logWarning("request log not flushed at shutdown", error))
      )
    )
    yield* Effect.forkScoped(Effect.forever(cycle))

    return { offer }
  }))

/** The recorder on its repository, as the composition root provides it to the envelope middleware. */
export const RequestLogRecorderLayer = requestLogRecorder().pipe(Layer.provide(RequestLogsRepo.layer))
