/**
 * The owner of `rpc_credentials`: internal-service credentials for `/rpc` (decision 0081).
 * Secrets are stored as SHA-256 digests only; a rotated credential keeps working until its
 * `expires_at`.
 */
import { Context, Effect, Layer, type Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

export const CredentialRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  prefix: Schema.String,
  scopes: Schema.Array(Schema.String),
  profile_ids: Schema.NullOr(Schema.Array(Schema.String)),
  rate_limit_per_minute: Schema.Int,
  rotated_from_id: Schema.NullOr(Schema.String),
  status: Schema.Literals(["active", "expired", "revoked"]),
  created_at: Schema.String,
  expires_at: Schema.NullOr(Schema.String),
  revoked_at: Schema.NullOr(Schema.String)
})
export type CredentialRow = typeof CredentialRow.Type

/** A live profile as a call acting on it sees it (the same tier rule as API keys). */
export const ProfileRow = Schema.Struct({
  profile_id: Schema.String,
  workspace_id: Schema.String,
  attribution_enabled: Schema.Boolean
})
export type ProfileRow = typeof ProfileRow.Type

export interface NewCredential {
  readonly id: string
  readonly name: string
  readonly prefix: string
  readonly digest: string
  readonly scopes: ReadonlyArray<string>
  readonly profileIds: ReadonlyArray<string> | null
  readonly rateLimitPerMinute: number
  readonly rotatedFromId: string | null
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class RpcCredentialsRepo extends Context.Service<RpcCredentialsRepo, {
  readonly insert: (credential: NewCredential) => Repo<void>
  /** The credential whose secret has this digest, whatever its status. */
  readonly byDigest: (digest: string) => Repo<Option.Option<CredentialRow>>
  readonly byId: (id: string) => Repo<Option.Option<CredentialRow>>
  readonly list: Repo<ReadonlyArray<CredentialRow>>
  /** Revokes now; false when it was already revoked or does not exist. */
  readonly revoke: (id: string) => Repo<boolean>
  /** Ends the credential `hours` from now (or at its own earlier expiry). */
  readonly expireIn: (id: string, hours: number) => Repo<void>
  /** A live profile of a live workspace, with its attribution tier. */
  readonly profile: (profileId: string) => Repo<Option.Option<ProfileRow>>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/RpcCredentialsRepo") {
  static readonly layer = Layer.effect(RpcCredentialsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const columns = sql`
        id, name, prefix, scopes, profile_ids, rate_limit_per_minute, rotated_from_id,
        CASE WHEN revoked_at IS NOT NULL THEN 'revoked'
             WHEN expires_at IS NOT NULL AND expires_at <= now() THEN 'expired'
             ELSE 'active' END AS status,
        ${isoTimestamp(sql, "created_at")} AS created_at,
        ${isoTimestamp(sql, "expires_at")} AS expires_at,
        ${isoTimestamp(sql, "revoked_at")} AS revoked_at`
      const rows = decodeRows(CredentialRow)
      const first = decodeFirstRow(CredentialRow)
      const firstProfile = decodeFirstRow(ProfileRow)
      const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))

      return {
        ...atDatabaseBoundary({
        insert: (c: NewCredential) =>
          Effect.asVoid(sql`
            INSERT INTO rpc_credentials (id, name, prefix, secret_hash, scopes, profile_ids, rate_limit_per_minute, rotated_from_id)
            VALUES (${c.id}, ${c.name}, ${c.prefix}, ${c.digest}, ${c.scopes}::text[],
                    ${c.profileIds === null ? null : c.profileIds}::uuid[], ${c.rateLimitPerMinute}, ${c.rotatedFromId})`),
        byDigest: (digest: string) => first(sql`SELECT ${columns} FROM rpc_credentials WHERE secret_hash = ${digest}`),
        byId: (id: string) => first(sql`SELECT ${columns} FROM rpc_credentials WHERE id = ${id}`),
        list: rows(sql`SELECT ${columns} FROM rpc_credentials ORDER BY created_at, id`),
        revoke: (id: string) =>
          Effect.map(
            firstId(sql`UPDATE rpc_credentials SET revoked_at = now() WHERE id = ${id} AND revoked_at IS NULL RETURNING id`),
            (row) => row._tag === "Some"
          ),
        expireIn: (id: string, hours: number) =>
          Effect.asVoid(sql`
            UPDATE rpc_credentials
            SET expires_at = LEAST(COALESCE(expires_at, 'infinity'::timestamptz), now() + make_interval(hours => ${hours}))
            WHERE id = ${id}`),
        profile: (profileId: string) =>
          firstProfile(sql`
            SELECT p.id AS profile_id, p.workspace_id,
                   (p.provisioned_by_app_id IS NULL OR COALESCE((
                     SELECT e.enabled FROM entitlements e WHERE e.profile_id = p.id AND e.feature = 'svc_attribution'), false))
                     AS attribution_enabled
            FROM profiles p JOIN workspaces w ON w.id = p.workspace_id AND w.archived_at IS NULL
            WHERE p.id = ${profileId} AND p.archived_at IS NULL`)
        }),
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
