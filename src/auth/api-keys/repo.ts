/** SQL of the workspace API-key routes: who may manage a workspace's keys, and the keys themselves. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { Scope } from "../../../schema/scopes.ts"
import type { Keyset } from "../../platform/pagination.ts"
import { decodeFirstRow, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

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
  /** Revokes the key if it is not yet revoked; false when it already was (or is not the workspace's). */
  readonly revoke: (workspaceId: string, keyId: string) => Repo<boolean>
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

      const decodeKeys = Schema.decodeUnknownEffect(Schema.Array(KeyRow))
      const keys = <E, R>(statement: Effect.Effect<ReadonlyArray<unknown>, E, R>) => Effect.flatMap(statement, decodeKeys)
      const firstKey = decodeFirstRow(KeyRow)
      const firstSettings = decodeFirstRow(ProfileSettings)
      const firstGrant = decodeFirstRow(GrantRow)
      const firstRole = decodeFirstRow(Schema.Struct({ role: Schema.String }))

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
          sql<{ present: boolean }>`
            SELECT EXISTS (SELECT 1 FROM workspaces
                           WHERE id = ${workspaceId} AND archived_at IS NULL AND created_by_app_id = ${appId}) AS present`,
          (rows) => rows[0]?.present === true
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

      const revoke = (workspaceId: string, keyId: string) =>
        Effect.map(
          sql`UPDATE api_keys SET revoked_at = now()
              WHERE id = ${keyId} AND workspace_id = ${workspaceId} AND revoked_at IS NULL
              RETURNING id`,
          (rows) => rows.length > 0
        )

      const hasSuccessor = (keyId: string) =>
        Effect.map(
          sql<{ present: boolean }>`SELECT EXISTS (SELECT 1 FROM api_keys WHERE rotated_from_id = ${keyId}) AS present`,
          (rows) => rows[0]?.present === true
        )

      const expireIn = (keyId: string, hours: number) =>
        Effect.asVoid(sql`
          UPDATE api_keys
          SET expires_at = LEAST(COALESCE(expires_at, 'infinity'::timestamptz), now() + make_interval(hours => ${hours}))
          WHERE id = ${keyId}`)

      return {
        memberRole: (workspaceId, userId) => orDatabaseUnavailable(memberRole(workspaceId, userId)),
        createdByApp: (workspaceId, appId) => orDatabaseUnavailable(createdByApp(workspaceId, appId)),
        lockProfile: (workspaceId, profileId) => orDatabaseUnavailable(lockProfile(workspaceId, profileId)),
        liveGrantOfApp: (appId, profileId) => orDatabaseUnavailable(liveGrantOfApp(appId, profileId)),
        liveGrant: (grantId) => orDatabaseUnavailable(liveGrant(grantId)),
        list: (workspaceId, limit, after) => orDatabaseUnavailable(list(workspaceId, limit, after)),
        find: (workspaceId, keyId) => orDatabaseUnavailable(find(workspaceId, keyId)),
        findForUpdate: (workspaceId, keyId) => orDatabaseUnavailable(findForUpdate(workspaceId, keyId)),
        update: (keyId, changes) => orDatabaseUnavailable(update(keyId, changes)),
        revoke: (workspaceId, keyId) => orDatabaseUnavailable(revoke(workspaceId, keyId)),
        hasSuccessor: (keyId) => orDatabaseUnavailable(hasSuccessor(keyId)),
        expireIn: (keyId, hours) => orDatabaseUnavailable(expireIn(keyId, hours)),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
