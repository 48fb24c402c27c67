/**
 * Group commit (decision 0036): items submitted while the writers are busy are written together,
 * one batch per transaction or statement, and each submitter waits for its own answer, which
 * comes only once its batch is written. When a batch fails as a whole, each of its items is
 * written again on its own, so one bad item never fails its neighbours.
 */
import { Cause, Deferred, Effect, Exit, Queue, type Scope } from "effect"

export interface GroupCommitOptions<I, A, E, WE> {
  /** Writers at once (each usually holds one pooled connection while it writes). */
  readonly writers: number
  /** Most items in one batch. */
  readonly maxBatch: number
  /** Items waiting before a submitter itself waits for room (backpressure onto the callers). */
  readonly capacity: number
  /** Writes one batch; answers each item's outcome, in the batch's order. */
  readonly write: (batch: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>, WE>
  /** Logged (with the cause) when a batch fails and its items are written one at a time. */
  readonly batchFailed: string
}

/** Starts the writers in the current scope; answers the function that submits one item and waits for its answer. */
export const groupCommit = <I, A, E, WE>(
  options: GroupCommitOptions<I, A, E, WE>
): Effect.Effect<(item: I) => Effect.Effect<A, E | WE>, never, Scope.Scope> =>
  Effect.gen(function*() {
    interface Pending {
      readonly item: I
      readonly done: Deferred.Deferred<A, E | WE>
    }
    const queue = yield* Queue.bounded<Pending>(options.capacity)

    const settle = (batch: ReadonlyArray<Pending>): Effect.Effect<void> =>
      Effect.matchCauseEffect(options.write(batch.map((pending) => pending.item)), {
        onSuccess: (answers) =>
          Effect.forEach(
            batch,
            (pending, index) => Deferred.done(pending.done, answers[index] ?? Exit.die("the batch answered fewer items than it was given")),
            { discard: true }
          ),
        onFailure: (cause) =>
          batch.length === 1
            ? Effect.forEach(batch, (pending) => Deferred.failCause(pending.done, cause), { discard: true })
            : Effect.andThen(
              Effect.logWarning(options.batchFailed, { batch_size: batch.length, cause: Cause.pretty(cause) }),
              Effect.forEach(batch, (pending) => settle([pending]), { discard: true })
            )
      })

    const writer = Effect.forever(Effect.flatMap(Queue.takeBetween(queue, 1, options.maxBatch), settle))
    for (let i = 0; i < options.writers; i++) yield* Effect.forkScoped(writer)

    return (item: I) =>
      Effect.flatMap(Deferred.make<A, E | WE>(), (done) => Effect.andThen(Queue.offer(queue, { item, done }), Deferred.await(done)))
  })
