/**
 * The owner of `connection_health` (decision 0092): what the last decisive send said about a
 * sending connection. No row means `ok`.
 */
import { Context, Effect, Layer, Schema } from "effect"
import type { Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

export const HEALTH_STATES = ["ok", "needs_action", "reconnect_required"] as const
export type HealthState = typeof HEALTH_STATES[number]

export const HealthRow = Schema.Struct({
  connection_id: Schema.String,
  health: Schema.Literals(HEALTH_STATES),
  reason: Schema.NullOr(Schema.String),
  provider_code: Schema.NullOr(Schema.String),
  changed_at: Schema.String
})
export type HealthRow = typeof HealthRow.Type

export interface HealthChange {
  readonly connectionId: string
  readonly profileId: string
  readonly provider: string
  readonly health: HealthState
  readonly reason: string | null
  readonly providerCode: string | null
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class ConnectionHealthRepo extends Context.Service<ConnectionHealthRepo, {
  /** The connection's row; `lock` holds it until the transaction ends (two sends take turns). */
  readonly current: (connectionId: string, lock: boolean) => Repo<Option.Option<HealthRow>>
  /**
   * Creates the connection's `ok` row when it has none (an existing row is left as it is), so that
   * two first refusals racing on a healthy connection both lock the same row and take turns.
   */
  readonly ensure: (connectionId: string, profileId: string, provider: string) => Repo<void>
  /** Writes the new health (creating the row on the first decisive send); answers the row. */
  readonly save: (change: HealthChange) => Repo<HealthRow>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/ConnectionHealthRepo") {
  static readonly layer = Layer.effect(ConnectionHealthRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const first = decodeFirstRow(HealthRow)
      const columns = sql`connection_id, health, reason, provider_code, ${isoTimestamp(sql, "changed_at")} AS changed_at`

      const current = (connectionId: string, lock: boolean) =>
        first(sql`SELECT ${columns} FROM connection_health WHERE connection_id = ${connectionId} ${lock ? sql`FOR UPDATE` : sql``}`)

      const ensure = (connectionId: string, profileId: string, provider: string) =>
        Effect.asVoid(sql`
          INSERT INTO connection_health (connection_id, profile_id, provider, health, changed_at)
          VALUES (${connectionId}, ${profileId}, ${provider}, 'ok', now())
          ON CONFLICT (connection_id, profile_id) DO NOTHING`)

      const save = (change: HealthChange) =>
        Effect.flatMap(
          first(sql`
            INSERT INTO connection_health (connection_id, profile_id, provider, health, reason, provider_code, changed_at)
            VALUES (${change.connectionId}, ${change.profileId}, ${change.provider}, ${change.health}, ${change.reason},
                    ${change.providerCode}, now())
            ON CONFLICT (connection_id, profile_id) DO UPDATE
              SET health = EXCLUDED.health, reason = EXCLUDED.reason, provider_code = EXCLUDED.provider_code, changed_at = now()
            RETURNING ${columns}`),
          (row) => row._tag === "Some" ? Effect.succeed(row.value) : Effect.die("connection_health upsert answered no row")
        )

      return {
        ...atDatabaseBoundary({ current, ensure, save }),
        transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
