/**
 * `keyedWriteWithin` (decision 0155): its statement is planned under `keyedWriteSettings`, and the
 * caller's transaction gets its own settings back after it, also when it had changed them itself.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { keyedWriteWithin } from "../../src/platform/claim-settings.ts"
import { onDatabase } from "../support/pg-databases.ts"

const settings = (sql: SqlClient) =>
  Effect.map(
    sql<{ seqscan: string; bitmapscan: string; hashjoin: string; mergejoin: string }>`
      SELECT current_setting('enable_seqscan') AS seqscan, current_setting('enable_bitmapscan') AS bitmapscan,
             current_setting('enable_hashjoin') AS hashjoin, current_setting('enable_mergejoin') AS mergejoin`,
    (rows) => rows[0]
  )

describe.skipIf(process.env["DATABASE_URL"] === undefined)("keyedWriteWithin", () => {
  it.effect("plans its statement under keyedWriteSettings and puts the caller's settings back", () =>
    Effect.promise(() =>
      onDatabase(process.env["DATABASE_URL"] ?? "", Effect.gen(function*() {
        const sql = yield* SqlClient
        const [inside, after] = yield* sql.withTransaction(Effect.gen(function*() {
          // The caller's own choice, which must survive: hash joins off, merge joins on.
          yield* sql`SELECT set_config('enable_hashjoin', 'off', true)`
          const inside = yield* keyedWriteWithin(sql, settings(sql))
          return [inside, yield* settings(sql)] as const
        }))
        assert.deepStrictEqual(inside, { seqscan: "off", bitmapscan: "off", hashjoin: "off", mergejoin: "off" })
        assert.deepStrictEqual(after, { seqscan: "on", bitmapscan: "on", hashjoin: "off", mergejoin: "on" })
        // Outside any transaction: its own, and nothing stays set.
        yield* keyedWriteWithin(sql, settings(sql))
        assert.deepStrictEqual(yield* settings(sql), { seqscan: "on", bitmapscan: "on", hashjoin: "on", mergejoin: "on" })
      }))
    ))
})
