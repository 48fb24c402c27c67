/** SQL of `dpa_handoffs` (its owner): single-use, expiring DPA hand-off links stored as token digests. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow } from "../../../platform/database.ts"

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS"Z"'`

export const HandoffRow = Schema.Struct({ id: Schema.String, profile_id: Schema.String, expires_at: Schema.String })
export type HandoffRow = typeof HandoffRow.Type

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class DpaHandoffRepo extends Context.Service<DpaHandoffRepo, {
  readonly insert: (profileId: string, appId: string, tokenHash: string, ttlMinutes: number) => Repo<HandoffRow>
  /** The live (unused, unexpired) link with this digest. */
  readonly findLive: (tokenHash: string) => Repo<Option.Option<HandoffRow>>
  /** Whether the app provisioned the profile or holds a live grant on it (a live profile of a live workspace). */
  readonly appReaches: (appId: string, profileId: string) => Repo<boolean>
  /** Marks the live link used in the statement that finds it: two uses cannot both win. */
  readonly consume: (tokenHash: string, userId: string) => Repo<Option.Option<HandoffRow>>
}>()("svc/DpaHandoffRepo") {
  static readonly layer = Layer.effect(DpaHandoffRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const first = decodeFirstRow(HandoffRow)

      const insert = (profileId: string, appId: string, tokenHash: string, ttlMinutes: number) =>
        Effect.flatMap(
          first(sql`
            INSERT INTO dpa_handoffs (id, profile_id, app_id, token_hash, expires_at)
            VALUES (${crypto.randomUUID()}, ${profileId}, ${appId}, ${tokenHash}, now() + make_interval(mins => ${ttlMinutes}))
            RETURNING id, profile_id, to_char(expires_at AT TIME ZONE 'UTC', ${sql.literal(ISO)}) AS expires_at`),
          (row) => Option.isSome(row) ? Effect.succeed(row.value) : Effect.die("INSERT ... RETURNING gave no hand-off")
        )

      const findLive = (tokenHash: string) =>
        first(sql`
          SELECT id, profile_id, to_char(expires_at AT TIME ZONE 'UTC', ${sql.literal(ISO)}) AS expires_at
          FROM dpa_handoffs WHERE token_hash = ${tokenHash} AND used_at IS NULL AND expires_at > now()`)

      const consume = (tokenHash: string, userId: string) =>
        first(sql`
          UPDATE dpa_handoffs SET used_at = now(), used_by = ${userId}
          WHERE token_hash = ${tokenHash} AND used_at IS NULL AND expires_at > now()
          RETURNING id, profile_id, to_char(expires_at AT TIME ZONE 'UTC', ${sql.literal(ISO)}) AS expires_at`)

      const firstReach = decodeFirstRow(Schema.Struct({ reaches: Schema.Boolean }))
      const appReaches = (appId: string, profileId: string) =>
        Effect.map(
          firstReach(sql`
            SELECT (p.provisioned_by_app_id IS NOT DISTINCT FROM ${appId} OR EXISTS (
                      SELECT 1 FROM grants g
                      WHERE g.app_id = ${appId} AND g.profile_id = p.id AND g.revoked_at IS NULL)) AS reaches
            FROM profiles p JOIN workspaces w ON w.id = p.workspace_id AND w.archived_at IS NULL
            WHERE p.id = ${profileId} AND p.archived_at IS NULL`),
          (row) => Option.isSome(row) && row.value.reaches
        )

      return atDatabaseBoundary({ insert, findLive, appReaches, consume })
    })
  )
}
