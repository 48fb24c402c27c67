/**
 * Reads of the runner table SqlRunnerStorage keeps (`cluster_runners`, written by the library
 * only), for the cluster status.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { atDatabaseBoundary } from "./database.ts"

/** Table prefix of the runner storage; the library default, so its migrations own the tables. */
export const CLUSTER_TABLE_PREFIX = "cluster"

const RunnerRow = Schema.Struct({ address: Schema.String, healthy: Schema.Boolean })
export type RunnerRow = typeof RunnerRow.Type

export class RunnersRepo extends Context.Service<RunnersRepo, {
  /**
   * Every runner by address; healthy when flagged so and its heartbeat is younger than
   * `expirationSeconds` (the shard lock expiry).
   */
  readonly list: (expirationSeconds: number) => Effect.Effect<ReadonlyArray<RunnerRow>, DatabaseUnavailable>
}>()("svc/RunnersRepo") {
  static readonly layer = Layer.effect(RunnersRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const runnersTable = `${CLUSTER_TABLE_PREFIX}_runners`

      const list = SqlSchema.findAll({
        Request: Schema.Number,
        Result: RunnerRow,
        execute: (expirationSeconds) =>
          sql`
            SELECT address,
                   (healthy AND last_heartbeat > NOW() - make_interval(secs => ${expirationSeconds})) AS healthy
            FROM ${sql(runnersTable)}
            ORDER BY address`
      })

      return atDatabaseBoundary({ list })
    })
  )
}
