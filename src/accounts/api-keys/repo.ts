/**
 * The owner of `api_keys`: minting (plaintext returned once, digest stored), revoking, and the
 * SQL of the workspace API-key routes (who may manage a workspace's keys, and the keys themselves).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { Scope } from "../../../schema/scopes.ts"
import type { Keyset } from "../../platform/pagination.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"
import { CredentialPrefix, displayPrefix, mintSecret, secretDigest } from "../../kernel/credentials/tokens.ts"

export const DEFAULT_RATE_LIMIT_PER_MINUTE = 60

export interface NewApiKey {
  readonly profileId: string
  readonly workspaceId: string
  readonly scopes: ReadonlyArray<Scope>
  readonly name?: string
  readonly rateLimitPerMinute?: number
  readonly oauthAppId?: string | null
  readonly grantId?: string | null
  readonly createdByUserId?: string | null
  readonly rotatedFromId?: string | null
}

export interface MintedApiKey {
  readonly id: string
  /** The plaintext: returned to the caller once, never stored. */
  readonly key: string
  readonly prefix: string
}

/** A key a revocation just stopped. */
export const RevokedKeyRow = Schema.Struct({ id: Schema.String, profile_id: Schema.String, workspace_id: Schema.String })
export type RevokedKeyRow = typeof RevokedKeyRow.Type

/** Which live keys a revocation stops (keys already revoked are never touched). */
export type KeysToRevoke =
  /** One key by id, optionally only when it is the workspace's. */
  | { readonly kind: "key"; readonly keyId: string; readonly workspaceId?: string }
  /** The key with this secret digest, when it was minted for the app. */
  | { readonly kind: "secret"; readonly appId: string; readonly digest: string }
  /** Every key minted for the app. */
  | { readonly kind: "app"; readonly appId: string }
  /** Every key of the workspace. */
  | { readonly kind: "workspace"; readonly workspaceId: string }
  /** The app's keys on the profile minted before `keyId` (its older generations; a connection's grant given up). */
  | { readonly kind: "app_older_on_profile"; readonly appId: string; readonly profileId: string; readonly keyId: string }
  /** Keys minted under a grant that carry any scope beyond `keepingScopes` (a narrowed grant). */
  | { readonly kind: "grant"; readonly grantId: string; readonly keepingScopes: ReadonlyArray<Scope> }
  /** Delegated keys (minted for an app) of the profile carrying any of `scopes`. */
  | { readonly kind: "delegated_on_profile"; readonly profileId: string; readonly scopes: ReadonlyArray<Scope> }
  /** Delegated keys on every live profile of the workspace carrying any of `scopes`; keys a person issued are untouched. */
  | { readonly kind: "delegated_in_workspace"; readonly workspaceId: string; readonly scopes: ReadonlyArray<Scope> }

export const KeyRow = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  profile_id: Schema.String,
  name: Schema.String,
  prefix: Schema.String,
  scopes: Schema.Array(Schema.String),
  rate_limit_per_minute: Schema.Int,
  oauth_app_id: Schema.NullOr(Schema.String),
  grant_id: Schema.NullOr(Schema.String),
  rotated_from_id: Schema.NullOr(Schema.String),
  status: Schema.Literals(["active", "expired", "revoked"]),
  created_at: Schema.String,
  expires_at: Schema.NullOr(Schema.String),
  revoked_at: Schema.NullOr(Schema.String)
})
export type KeyRow = typeof KeyRow.Type

/** What decides which scopes a key on the profile may hold (S5: healthcare family). */
export const ProfileSettings = Schema.Struct({
  id: Schema.String,
  privacy_mode: Schema.String,
  is_healthcare_agency: Schema.Boolean
})
export type ProfileSettings = typeof ProfileSettings.Type

const GrantRow = Schema.Struct({ id: Schema.String, connect_scopes: Schema.Array(Schema.String) })
export type GrantRow = typeof GrantRow.Type

export interface KeyChanges {
  readonly name?: string
  readonly scopes?: ReadonlyArray<Scope>
  readonly rateLimitPerMinute?: number
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class ApiKeysRepo extends Context.Service<ApiKeysRepo, {
  /** Stores a new key (its digest only); answers the plaintext once. */
  readonly mint: (key: NewApiKey) => Repo<MintedApiKey>
  /** Stops the live keys `which` names; answers them. */
  readonly revokeKeys: (which: KeysToRevoke) => Repo<ReadonlyArray<RevokedKeyRow>>
  /** Replaces a key's scopes (a key narrowed right after its mint). */
  readonly setScopes: (keyId: string, scopes: ReadonlyArray<Scope>) => Repo<void>
  /** The person's role in the live workspace; None when not a (current) member or no such live workspace. */
  readonly memberRole: (workspaceId: string, userId: string) => Repo<Option.Option<string>>
  /** Whether the live workspace was created by this OAuth app (`workspaces.created_by_app_id`). */
  readonly createdByApp: (workspaceId: string, appId: string) => Repo<boolean>
  /** A live profile of the workspace, share-locked until the transaction ends (its healthcare settings hold still). */
  readonly lockProfile: (workspaceId: string, profileId: string) => Repo<Option.Option<ProfileSettings>>
  /** The app's live grant on a profile. */
  readonly liveGrantOfApp: (appId: string, profileId: string) => Repo<Option.Option<GrantRow>>
  /** A grant by id, if it is still live. */
  readonly liveGrant: (grantId: string) => Repo<Option.Option<GrantRow>>
  /** Keys of the workspace's live profiles, oldest first, one more than `limit`. */
  readonly list: (workspaceId: string, limit: number, after: Option.Option<Keyset>) => Repo<ReadonlyArray<KeyRow>>
  /** A key of the workspace (on a live profile). */
  readonly find: (workspaceId: string, keyId: string) => Repo<Option.Option<KeyRow>>
  /** The same, row-locked until the transaction ends. */
  readonly findForUpdate: (workspaceId: string, keyId: string) => Repo<Option.Option<KeyRow>>
  readonly update: (keyId: string, changes: KeyChanges) => Repo<void>
  /** Whether a key was already minted by rotating this one. */
  readonly hasSuccessor: (keyId: string) => Repo<boolean>
  /** Ends the key `hours` from now (or at its own earlier expiry). */
  readonly expireIn: (keyId: string, hours: number) => Repo<void>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/ApiKeysRepo") {
  static readonly layer = Layer.effect(ApiKeysRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      const keyColumns = sql`
        k.id, k.workspace_id, k.profile_id, k.name, k.prefix, k.scopes, k.rate_limit_per_minute, k.oauth_app_id,
        k.grant_id, k.rotated_from_id,
        CASE WHEN k.revoked_at IS NOT NULL THEN 'revoked'
             WHEN k.expires_at IS NOT NULL AND k.expires_at <= now() THEN 'expired'
             ELSE 'active' END AS status,
        ${isoTimestamp(sql, "k.created_at")} AS created_at,
        ${isoTimestamp(sql, "k.expires_at")} AS expires_at,
        ${isoTimestamp(sql, "k.revoked_at")} AS revoked_at`
      /** Keys of live profiles only: a key of an archived profile is as absent as an unknown one. */
      const keysOf = (workspaceId: string) => sql`
        api_keys k JOIN profiles p ON p.id = k.profile_id AND p.archived_at IS NULL
        WHERE k.workspace_id = ${workspaceId}`

      const keys = decodeRows(KeyRow)
      const revokedRows = decodeRows(RevokedKeyRow)
      const firstKey = decodeFirstRow(KeyRow)
      const firstSettings = decodeFirstRow(ProfileSettings)
      const firstGrant = decodeFirstRow(GrantRow)
      const firstRole = decodeFirstRow(Schema.Struct({ role: Schema.String }))
      const firstPresent = decodeFirstRow(Schema.Struct({ present: Schema.Boolean }))

      const memberRole = (workspaceId: string, userId: string) =>
        Effect.map(
          firstRole(sql`
            SELECT m.role FROM workspaces w
            JOIN workspace_memberships m ON m.workspace_id = w.id AND m.user_id = ${userId} AND m.removed_at IS NULL
            WHERE w.id = ${workspaceId} AND w.archived_at IS NULL`),
          Option.map((row) => row.role)
        )

      const createdByApp = (workspaceId: string, appId: string) =>
        Effect.map(
          firstPresent(sql`
            SELECT EXISTS (SELECT 1 FROM workspaces
                           WHERE id = ${workspaceId} AND archived_at IS NULL AND created_by_app_id = ${appId}) AS present`),
          Option.exists((row) => row.present)
        )

      const lockProfile = (workspaceId: string, profileId: string) =>
        firstSettings(sql`
          SELECT p.id, p.privacy_mode, w.is_healthcare_agency
          FROM profiles p JOIN workspaces w ON w.id = p.workspace_id AND w.archived_at IS NULL
          WHERE p.id = ${profileId} AND p.workspace_id = ${workspaceId} AND p.archived_at IS NULL
          FOR SHARE OF p, w`)

      const liveGrantOfApp = (appId: string, profileId: string) =>
        firstGrant(sql`SELECT id, connect_scopes FROM grants
                       WHERE app_id = ${appId} AND profile_id = ${profileId} AND revoked_at IS NULL`)

      const liveGrant = (grantId: string) =>
        firstGrant(sql`SELECT id, connect_scopes FROM grants WHERE id = ${grantId} AND revoked_at IS NULL`)

      const list = (workspaceId: string, limit: number, after: Option.Option<Keyset>) =>
        Option.match(after, {
          onNone: () =>
            keys(sql`SELECT ${keyColumns} FROM ${keysOf(workspaceId)}
                     ORDER BY k.created_at, k.id LIMIT ${limit + 1}`),
          onSome: (keyset) =>
            keys(sql`SELECT ${keyColumns} FROM ${keysOf(workspaceId)}
                       AND (k.created_at, k.id) > (${keyset.createdAt}::timestamptz, ${keyset.id}::uuid)
                     ORDER BY k.created_at, k.id LIMIT ${limit + 1}`)
        })

      const find = (workspaceId: string, keyId: string) =>
        firstKey(sql`SELECT ${keyColumns} FROM ${keysOf(workspaceId)} AND k.id = ${keyId}`)

      const findForUpdate = (workspaceId: string, keyId: string) =>
        firstKey(sql`SELECT ${keyColumns} FROM ${keysOf(workspaceId)} AND k.id = ${keyId} FOR UPDATE OF k`)

      const update = (keyId: string, changes: KeyChanges) =>
        Effect.asVoid(sql`
          UPDATE api_keys SET
            name = COALESCE(${changes.name ?? null}, name),
            scopes = COALESCE(${changes.scopes ?? null}::text[], scopes),
            rate_limit_per_minute = COALESCE(${changes.rateLimitPerMinute ?? null}::int, rate_limit_per_minute)
          WHERE id = ${keyId}`)

      const mint = Effect.fn("ApiKeysRepo.mint")(function*(input: NewApiKey) {
        const key = mintSecret(CredentialPrefix.apiKey)
        const id = crypto.randomUUID()
        const prefix = displayPrefix(key, CredentialPrefix.apiKey)
        yield* sql`
          INSERT INTO api_keys (id, profile_id, workspace_id, name, prefix, secret_hash, scopes, rate_limit_per_minute,
                                oauth_app_id, grant_id, created_by_user_id, rotated_from_id)
          VALUES (${id}, ${input.profileId}, ${input.workspaceId}, ${input.name ?? ""}, ${prefix}, ${secretDigest(key)},
                  ${input.scopes}, ${input.rateLimitPerMinute ?? DEFAULT_RATE_LIMIT_PER_MINUTE},
                  ${input.oauthAppId ?? null}, ${input.grantId ?? null}, ${input.createdByUserId ?? null},
                  ${input.rotatedFromId ?? null})`
        return { id, key, prefix } satisfies MintedApiKey
      })

      const revokedWhere = (which: KeysToRevoke) => {
        switch (which.kind) {
          case "key":
            return which.workspaceId === undefined
              ? sql`id = ${which.keyId}`
              : sql`id = ${which.keyId} AND workspace_id = ${which.workspaceId}`
          case "secret":
            return sql`secret_hash = ${which.digest} AND oauth_app_id = ${which.appId}`
          case "app":
            return sql`oauth_app_id = ${which.appId}`
          case "workspace":
            return sql`workspace_id = ${which.workspaceId}`
          case "app_older_on_profile":
            return sql`oauth_app_id = ${which.appId} AND profile_id = ${which.profileId} AND id <> ${which.keyId}
                       AND created_at < (SELECT k.created_at FROM api_keys k WHERE k.id = ${which.keyId})`
          case "grant":
            return sql`grant_id = ${which.grantId} AND NOT (scopes <@ ${which.keepingScopes}::text[])`
          case "delegated_on_profile":
            return sql`profile_id = ${which.profileId} AND oauth_app_id IS NOT NULL AND scopes && ${which.scopes}::text[]`
          case "delegated_in_workspace":
            return sql`profile_id IN (SELECT p.id FROM profiles p WHERE p.workspace_id = ${which.workspaceId} AND p.archived_at IS NULL)
                       AND oauth_app_id IS NOT NULL AND scopes && ${which.scopes}::text[]`
        }
      }

      const revokeKeys = (which: KeysToRevoke) =>
        revokedRows(sql`
          UPDATE api_keys SET revoked_at = now()
          WHERE ${revokedWhere(which)} AND revoked_at IS NULL
          RETURNING id, profile_id, workspace_id`)

      const setScopes = (keyId: string, scopes: ReadonlyArray<Scope>) =>
        Effect.asVoid(sql`UPDATE api_keys SET scopes = ${scopes} WHERE id = ${keyId}`)

      const hasSuccessor = (keyId: string) =>
        Effect.map(
          firstPresent(sql`SELECT EXISTS (SELECT 1 FROM api_keys WHERE rotated_from_id = ${keyId}) AS present`),
          Option.exists((row) => row.present)
        )

      const expireIn = (keyId: string, hours: number) =>
        Effect.asVoid(sql`
          UPDATE api_keys
          SET expires_at = LEAST(COALESCE(expires_at, 'infinity'::timestamptz), now() + make_interval(hours => ${hours}))
          WHERE id = ${keyId}`)

      return {
        ...atDatabaseBoundary({
          mint,
          revokeKeys,
          setScopes,
          memberRole,
          createdByApp,
          lockProfile,
          liveGrantOfApp,
          liveGrant,
          list,
          find,
          findForUpdate,
          update,
          hasSuccessor,
          expireIn
        }),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
