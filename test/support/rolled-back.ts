import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

class RolledBack {
  readonly _tag = "RolledBack"
}

/**
 * Runs `effect` in a transaction that is rolled back once it is done (its assertions already made):
 * DDL and rows a test makes on the shared migrated tables do not outlive it.
 */
export const rolledBack = <E, R>(effect: Effect.Effect<void, E, R>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const failed = yield* sql.withTransaction(Effect.andThen(effect, Effect.fail(new RolledBack()))).pipe(Effect.flip)
    assert.instanceOf(failed, RolledBack)
  })
