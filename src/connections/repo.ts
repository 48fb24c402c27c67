import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { Connection } from "../../schema/connections.ts"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import type { Keyset } from "../platform/pagination.ts"
import { atDatabaseBoundary } from "../platform/database.ts"
import { isoTimestamp } from "../platform/sql-time.ts"

export class ConnectionsRepo extends Context.Service<ConnectionsRepo, {
  /** Live connections of a profile, oldest first, one more than `limit` to tell whether a page follows. */
  readonly list: (
    profileId: string,
    limit: number,
    after: Option.Option<Keyset>
  ) => Effect.Effect<ReadonlyArray<Connection & { readonly id: string }>, DatabaseUnavailable>
  /** Deletes every connection of the profile (archiving it: non-audit data goes). */
  readonly deleteForProfile: (profileId: string) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/ConnectionsRepo") {
  static readonly layer = Layer.effect(ConnectionsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const decode = Schema.decodeUnknownEffect(Schema.Array(Connection))
      const columns = sql`
        c.id, c.provider, c.status, c.status_reason, c.display_name,
        (c.provider_kind = 'adplatform' AND COALESCE(e.enabled, false)) AS delivers_spend,
        ${isoTimestamp(sql, "c.created_at")} AS created_at`
      const list = (profileId: string, limit: number, after: Option.Option<Keyset>) =>
        Effect.flatMap(
          Option.match(after, {
            onNone: () =>
              sql`SELECT ${columns} FROM connections c
                  LEFT JOIN entitlements e ON e.profile_id = c.profile_id AND e.feature = 'svc_attribution'
                  WHERE c.profile_id = ${profileId} AND c.disconnected_at IS NULL
                  ORDER BY c.created_at, c.id LIMIT ${limit + 1}`,
            onSome: (keyset) =>
              sql`SELECT ${columns} FROM connections c
                  LEFT JOIN entitlements e ON e.profile_id = c.profile_id AND e.feature = 'svc_attribution'
                  WHERE c.profile_id = ${profileId} AND c.disconnected_at IS NULL
                    AND (c.created_at, c.id) > (${keyset.createdAt}::timestamptz, ${keyset.id}::uuid)
                  ORDER BY c.created_at, c.id LIMIT ${limit + 1}`
          }),
          decode
        )
      const deleteForProfile = (profileId: string) =>
        Effect.asVoid(sql`DELETE FROM connections WHERE profile_id = ${profileId}`)

      return atDatabaseBoundary({ list, deleteForProfile })
    })
  )
}
