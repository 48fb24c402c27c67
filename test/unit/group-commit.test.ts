/**
 * The group-commit helper (src/platform/group-commit.ts): concurrent submissions share batches no
 * larger than `maxBatch`, each submitter gets its own answer, an item's own failure stays its own,
 * and a batch that fails as a whole is written again one item at a time, so only the bad item fails.
 */
import { assert, describe, it } from "@effect/vitest"
import { Data, Deferred, Effect, Exit, Fiber } from "effect"
import { groupCommit } from "../../src/platform/group-commit.ts"

class BatchRefused extends Data.TaggedError("BatchRefused")<{ readonly size: number }> {}
/** The item that breaks any batch it is in. */
const POISON = 6

class ItemRefused extends Data.TaggedError("ItemRefused")<{ readonly item: number }> {}

describe("groupCommit", () => {
  it.effect("batches what waits, answers each submitter its own outcome, retries a failed batch item by item", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<number>> = []
      // The first batch waits until every submission is queued, so the rest wait for the writer together.
      const gate = yield* Deferred.make<void>()
      const submit = yield* groupCommit({
        writers: 1,
        maxBatch: 4,
        capacity: 64,
        batchFailed: "test batch failed",
        write: (batch: ReadonlyArray<number>) =>
          Effect.gen(function*() {
            batches.push(batch)
            if (batches.length === 1) yield* Deferred.await(gate)
            // 6 poisons any batch it is in (as a row that breaks the statement would). Whatever the first
            // batch took (1 to 4 items from 0), 6 falls in a later batch of four.
            if (batch.length > 1 && batch.includes(POISON)) return yield* new BatchRefused({ size: batch.length })
            if (batch.includes(POISON)) return yield* new BatchRefused({ size: 1 })
            // Odd items are refused on their own (as a key conflict would be), in their answer only.
            return batch.map((item) => item % 2 === 1 ? Exit.fail(new ItemRefused({ item })) : Exit.succeed(item * 10))
          })
      })
      const items = Array.from({ length: 14 }, (_, i) => i)
      const fibers = yield* Effect.forEach(items, (item) => Effect.forkChild(Effect.exit(submit(item))))
      // Every submission queued: let the first batch go.
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      const exits = yield* Effect.forEach(fibers, Fiber.join)

      for (const item of items) {
        const exit = exits[item]
        if (exit === undefined) return assert.fail(`no answer for ${item}`)
        if (item === POISON) {
          assert.isTrue(Exit.isFailure(exit) && exit.cause.toString().includes("BatchRefused"), String(exit))
        } else if (item % 2 === 1) {
          assert.isTrue(Exit.isFailure(exit) && exit.cause.toString().includes("ItemRefused"), String(exit))
        } else {
          assert.deepStrictEqual(exit, Exit.succeed(item * 10))
        }
      }
      assert.isTrue(batches.every((batch) => batch.length <= 4), JSON.stringify(batches))
      assert.isTrue(batches.some((batch) => batch.length > 1), JSON.stringify(batches))
      // The batch holding the poison failed whole; its items were then written alone, each once more.
      const poisoned = batches.find((batch) => batch.length > 1 && batch.includes(POISON))
      assert.isDefined(poisoned, JSON.stringify(batches))
      for (const item of poisoned ?? []) assert.isTrue(batches.some((batch) => batch.length === 1 && batch[0] === item), `${item} alone`)
      // Every item was answered by a batch that held it.
      assert.sameMembers([...new Set(batches.flat())], items)
    }).pipe(Effect.scoped))
})
