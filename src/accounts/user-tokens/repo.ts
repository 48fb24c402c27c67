/** The owner of `user_tokens`: MCP user tokens (`svc_user_...`), stored as digests. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { McpGrant } from "../../../schema/scopes.ts"
import { atDatabaseBoundary, decodeFirstRow } from "../../platform/database.ts"

const ExpiresRow = Schema.Struct({ expires_at: Schema.NullOr(Schema.String) })
const RevokedTokenRow = Schema.Struct({ id: Schema.String, user_id: Schema.String })
export type RevokedTokenRow = typeof RevokedTokenRow.Type

export interface NewUserTokenRow {
  readonly id: string
  readonly userId: string
  readonly prefix: string
  readonly secretHash: string
  readonly grants: ReadonlyArray<McpGrant>
  readonly rateLimitUnitsPerMinute: number
  readonly mcpClientId: string | null
  /** Null: the token does not expire. */
  readonly expiresInDays: number | null
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class UserTokensRepo extends Context.Service<UserTokensRepo, {
  /** Stores a token; answers its expiry as an ISO timestamp (null when it never expires). */
  readonly insert: (token: NewUserTokenRow) => Repo<string | null>
  /** Revokes a live user token; None when it was already revoked. */
  readonly revoke: (tokenId: string) => Repo<Option.Option<RevokedTokenRow>>
}>()("svc/UserTokensRepo") {
  static readonly layer = Layer.effect(UserTokensRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstExpires = decodeFirstRow(ExpiresRow)
      const firstRevoked = decodeFirstRow(RevokedTokenRow)

      const insert = (t: NewUserTokenRow) =>
        Effect.map(
          firstExpires(sql`
            INSERT INTO user_tokens (id, user_id, prefix, secret_hash, grants, rate_limit_units_per_minute, mcp_client_id, expires_at)
            VALUES (${t.id}, ${t.userId}, ${t.prefix}, ${t.secretHash}, ${t.grants}, ${t.rateLimitUnitsPerMinute}, ${t.mcpClientId},
                    CASE WHEN ${t.expiresInDays}::int IS NULL THEN NULL ELSE now() + make_interval(days => ${t.expiresInDays}::int) END)
            RETURNING to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS expires_at`),
          Option.match({ onNone: () => null, onSome: (row) => row.expires_at })
        )

      const revoke = (tokenId: string) =>
        firstRevoked(sql`
          UPDATE user_tokens SET revoked_at = now() WHERE id = ${tokenId} AND revoked_at IS NULL
          RETURNING id, user_id`)

      return atDatabaseBoundary({ insert, revoke })
    })
  )
}
