/** SQL of the operator surface: OAuth apps, commerce apps and the workspace healthcare-agency flag. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import { DpaStatus, ProfileResolution, RateTier, type UpdateOAuthApp } from "../../schema/admin.ts"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import type { Scope } from "../../schema/scopes.ts"
import type { Keyset } from "../platform/pagination.ts"
import { decodeFirstRow, decodeRows, orDatabaseUnavailable } from "../platform/database.ts"
import { isoTimestamp } from "../platform/sql-time.ts"

export const OAuthAppRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  client_id: Schema.String,
  redirect_uris: Schema.Array(Schema.String),
  allowed_return_origins: Schema.Array(Schema.String),
  profile_resolution: ProfileResolution,
  rate_tier: RateTier,
  owner_workspace_id: Schema.NullOr(Schema.String),
  dpa_status: DpaStatus,
  dpa_version: Schema.NullOr(Schema.String),
  dpa_accepted_at: Schema.NullOr(Schema.String),
  dpa_accepted_by: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type OAuthAppRow = typeof OAuthAppRow.Type

export const CommerceAppRow = Schema.Struct({
  id: Schema.String,
  shop: Schema.String,
  name: Schema.String,
  client_id: Schema.String,
  scopes: Schema.Array(Schema.String),
  created_at: Schema.String
})
export type CommerceAppRow = typeof CommerceAppRow.Type

export interface NewOAuthApp {
  readonly id: string
  readonly name: string
  readonly clientId: string
  readonly clientSecretHash: string
  readonly jwtSecretEncrypted: string
  readonly redirectUris: ReadonlyArray<string>
  readonly allowedReturnOrigins: ReadonlyArray<string>
  readonly profileResolution: "email" | "external_ref"
  readonly rateTier: "standard" | "elevated" | "internal"
  readonly ownerWorkspaceId: string | null
}

export interface NewCommerceApp {
  readonly shop: string
  readonly name: string
  readonly clientId: string
  readonly clientSecretEncrypted: string
  readonly scopes: ReadonlyArray<string>
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class AdminRepo extends Context.Service<AdminRepo, {
  readonly insertApp: (app: NewOAuthApp) => Repo<OAuthAppRow>
  readonly listApps: (options: { readonly limit: number; readonly after: Option.Option<Keyset> }) => Repo<ReadonlyArray<OAuthAppRow>>
  readonly findApp: (id: string) => Repo<Option.Option<OAuthAppRow>>
  readonly updateApp: (id: string, patch: UpdateOAuthApp) => Repo<Option.Option<OAuthAppRow>>
  /** Soft-deletes the app, revokes its grants and every key minted for it; None when there is no such app. */
  readonly deleteApp: (id: string) => Repo<Option.Option<{ readonly revokedKeys: number }>>
  readonly setClientSecret: (id: string, hash: string) => Repo<Option.Option<OAuthAppRow>>
  readonly setJwtSecret: (id: string, encrypted: string) => Repo<Option.Option<OAuthAppRow>>
  readonly workspaceExists: (id: string) => Repo<boolean>
  readonly insertCommerceApp: (app: NewCommerceApp) => Repo<Option.Option<CommerceAppRow>>
  readonly listCommerceApps: Repo<ReadonlyArray<CommerceAppRow>>
  readonly disableCommerceApp: (id: string) => Repo<boolean>
  /** The live workspace's healthcare-agency flag, its row locked until the transaction ends. */
  readonly lockWorkspaceFlag: (id: string) => Repo<Option.Option<boolean>>
  readonly setWorkspaceFlag: (id: string, isHealthcareAgency: boolean) => Repo<void>
  /**
   * Revokes, on every live profile of the workspace, the live delegated keys (minted for an
   * OAuth app) carrying any of `scopes`; keys a person issued are untouched. Answers the count.
   */
  readonly revokeWorkspaceDelegatedKeysWith: (workspaceId: string, scopes: ReadonlyArray<Scope>) => Repo<number>
}>()("svc/AdminRepo") {
  static readonly layer = Layer.effect(AdminRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const appColumns = sql`
        id, name, client_id, redirect_uris, allowed_return_origins, profile_resolution, rate_tier,
        owner_workspace_id, dpa_status, dpa_version,
        ${isoTimestamp(sql, "dpa_accepted_at")} AS dpa_accepted_at, dpa_accepted_by,
        ${isoTimestamp(sql, "created_at")} AS created_at, ${isoTimestamp(sql, "updated_at")} AS updated_at`
      const commerceColumns = sql`id, shop, name, client_id, scopes, ${isoTimestamp(sql, "created_at")} AS created_at`

      const apps = decodeRows(OAuthAppRow)
      const firstApp = decodeFirstRow(OAuthAppRow)

      const insertApp = (a: NewOAuthApp) =>
        Effect.flatMap(
          firstApp(sql`
            INSERT INTO oauth_apps (id, name, client_id, client_secret_hash, jwt_secret_encrypted, redirect_uris,
                                    allowed_return_origins, profile_resolution, rate_tier, owner_workspace_id)
            VALUES (${a.id}, ${a.name}, ${a.clientId}, ${a.clientSecretHash}, ${a.jwtSecretEncrypted},
                    ${a.redirectUris}, ${a.allowedReturnOrigins}, ${a.profileResolution}, ${a.rateTier},
                    ${a.ownerWorkspaceId})
            RETURNING ${appColumns}`),
          Option.match({ onNone: () => Effect.die("INSERT ... RETURNING gave no row"), onSome: Effect.succeed })
        )

      const listApps = (limit: number, after: Option.Option<Keyset>) =>
        Option.match(after, {
          onNone: () =>
            apps(sql`SELECT ${appColumns} FROM oauth_apps WHERE deleted_at IS NULL
                     ORDER BY created_at, id LIMIT ${limit + 1}`),
          onSome: (keyset) =>
            apps(sql`SELECT ${appColumns} FROM oauth_apps
                     WHERE deleted_at IS NULL AND (created_at, id) > (${keyset.createdAt}::timestamptz, ${keyset.id}::uuid)
                     ORDER BY created_at, id LIMIT ${limit + 1}`)
        })

      const findApp = (id: string) =>
        firstApp(sql`SELECT ${appColumns} FROM oauth_apps WHERE id = ${id} AND deleted_at IS NULL`)

      const updateApp = (id: string, patch: UpdateOAuthApp) =>
        firstApp(sql`
          UPDATE oauth_apps SET
            name = COALESCE(${patch.name ?? null}, name),
            redirect_uris = COALESCE(${patch.redirect_uris ?? null}::text[], redirect_uris),
            allowed_return_origins = COALESCE(${patch.allowed_return_origins ?? null}::text[], allowed_return_origins),
            profile_resolution = COALESCE(${patch.profile_resolution ?? null}, profile_resolution),
            rate_tier = COALESCE(${patch.rate_tier ?? null}, rate_tier),
            owner_workspace_id = CASE WHEN ${patch.owner_workspace_id !== undefined}
                                      THEN ${patch.owner_workspace_id ?? null}::uuid ELSE owner_workspace_id END,
            updated_at = now()
          WHERE id = ${id} AND deleted_at IS NULL
          RETURNING ${appColumns}`)

      const deleteApp = (id: string) =>
        sql.withTransaction(
          Effect.gen(function*() {
            const deleted = yield* sql`UPDATE oauth_apps SET deleted_at = now(), updated_at = now()
                                       WHERE id = ${id} AND deleted_at IS NULL RETURNING id`
            if (deleted.length === 0) return Option.none()
            yield* sql`UPDATE grants SET revoked_at = now() WHERE app_id = ${id} AND revoked_at IS NULL`
            const keys = yield* sql`UPDATE api_keys SET revoked_at = now()
                                    WHERE oauth_app_id = ${id} AND revoked_at IS NULL RETURNING id`
            return Option.some({ revokedKeys: keys.length })
          })
        )

      const setClientSecret = (id: string, hash: string) =>
        firstApp(sql`UPDATE oauth_apps SET client_secret_hash = ${hash}, updated_at = now()
                     WHERE id = ${id} AND deleted_at IS NULL RETURNING ${appColumns}`)

      const setJwtSecret = (id: string, encrypted: string) =>
        firstApp(sql`UPDATE oauth_apps SET jwt_secret_encrypted = ${encrypted}, updated_at = now()
                     WHERE id = ${id} AND deleted_at IS NULL RETURNING ${appColumns}`)

      const workspaceExists = (id: string) =>
        Effect.map(
          sql<{ present: boolean }>`SELECT EXISTS (SELECT 1 FROM workspaces WHERE id = ${id} AND archived_at IS NULL) AS present`,
          (rows) => rows[0]?.present === true
        )

      const insertCommerceApp = (app: NewCommerceApp) =>
        SqlSchema.findOneOption({
          Request: Schema.Void,
          Result: CommerceAppRow,
          execute: () =>
            sql`
              INSERT INTO commerce_apps (id, shop, name, client_id, client_secret_encrypted, scopes)
              VALUES (${crypto.randomUUID()}, ${app.shop}, ${app.name}, ${app.clientId}, ${app.clientSecretEncrypted},
                      ${app.scopes})
              ON CONFLICT (shop) WHERE disabled_at IS NULL DO NOTHING
              RETURNING ${commerceColumns}`
        })(undefined)

      const listCommerceApps = SqlSchema.findAll({
        Request: Schema.Void,
        Result: CommerceAppRow,
        execute: () => sql`SELECT ${commerceColumns} FROM commerce_apps WHERE disabled_at IS NULL ORDER BY created_at, id`
      })(undefined)

      const disableCommerceApp = (id: string) =>
        Effect.map(
          sql`UPDATE commerce_apps SET disabled_at = now() WHERE id = ${id} AND disabled_at IS NULL RETURNING id`,
          (rows) => rows.length > 0
        )

      const FlagRow = Schema.Struct({ is_healthcare_agency: Schema.Boolean })
      const firstFlag = decodeFirstRow(FlagRow)
      const lockWorkspaceFlag = (id: string) =>
        Effect.map(
          firstFlag(sql`SELECT is_healthcare_agency FROM workspaces WHERE id = ${id} AND archived_at IS NULL FOR UPDATE`),
          Option.map((row) => row.is_healthcare_agency)
        )

      const revokeWorkspaceDelegatedKeysWith = (workspaceId: string, scopes: ReadonlyArray<Scope>) =>
        Effect.map(
          sql`UPDATE api_keys k SET revoked_at = now()
              FROM profiles p
              WHERE k.profile_id = p.id AND p.workspace_id = ${workspaceId} AND p.archived_at IS NULL
                AND k.oauth_app_id IS NOT NULL AND k.revoked_at IS NULL
                AND k.scopes && ${scopes}::text[]
              RETURNING k.id`,
          (rows) => rows.length
        )

      return {
        lockWorkspaceFlag: (id) => orDatabaseUnavailable(lockWorkspaceFlag(id)),
        setWorkspaceFlag: (id, flag) =>
          orDatabaseUnavailable(Effect.asVoid(sql`UPDATE workspaces SET is_healthcare_agency = ${flag} WHERE id = ${id}`)),
        revokeWorkspaceDelegatedKeysWith: (workspaceId, scopes) =>
          orDatabaseUnavailable(revokeWorkspaceDelegatedKeysWith(workspaceId, scopes)),
        insertApp: (app) => orDatabaseUnavailable(insertApp(app)),
        listApps: ({ limit, after }) => orDatabaseUnavailable(listApps(limit, after)),
        findApp: (id) => orDatabaseUnavailable(findApp(id)),
        updateApp: (id, patch) => orDatabaseUnavailable(updateApp(id, patch)),
        deleteApp: (id) => orDatabaseUnavailable(deleteApp(id)),
        setClientSecret: (id, hash) => orDatabaseUnavailable(setClientSecret(id, hash)),
        setJwtSecret: (id, encrypted) => orDatabaseUnavailable(setJwtSecret(id, encrypted)),
        workspaceExists: (id) => orDatabaseUnavailable(workspaceExists(id)),
        insertCommerceApp: (app) => orDatabaseUnavailable(insertCommerceApp(app)),
        listCommerceApps: orDatabaseUnavailable(listCommerceApps),
        disableCommerceApp: (id) => orDatabaseUnavailable(disableCommerceApp(id))
      }
    })
  )
}
