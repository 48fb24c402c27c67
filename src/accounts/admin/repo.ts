/**
 * The owner of `oauth_apps` (with their DPA), `commerce_apps` and `grants`; the SQL of the operator
 * surface. Keys go through src/accounts/api-keys/repo.ts, workspaces through src/accounts/workspaces/repo.ts.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import { DpaStatus, ProfileResolution, RateTier, type UpdateOAuthApp } from "../../../schema/admin.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { ConnectScope } from "../../../schema/scopes.ts"
import type { Keyset } from "../../platform/pagination.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

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

/** A live commerce app with its sealed client secret: what a hand-off and a refresh authenticate with. */
export const CommerceAppCredentials = Schema.Struct({
  id: Schema.String,
  client_id: Schema.String,
  client_secret_encrypted: Schema.String,
  scopes: Schema.Array(Schema.String)
})
export type CommerceAppCredentials = typeof CommerceAppCredentials.Type

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
  /** Soft-deletes the app; false when there is no such (live) app. Its grants and keys are the caller's to revoke. */
  readonly deleteApp: (id: string) => Repo<boolean>
  readonly setClientSecret: (id: string, hash: string) => Repo<Option.Option<OAuthAppRow>>
  readonly setJwtSecret: (id: string, encrypted: string) => Repo<Option.Option<OAuthAppRow>>
  readonly workspaceExists: (id: string) => Repo<boolean>
  readonly insertCommerceApp: (app: NewCommerceApp) => Repo<Option.Option<CommerceAppRow>>
  readonly listCommerceApps: Repo<ReadonlyArray<CommerceAppRow>>
  readonly disableCommerceApp: (id: string) => Repo<boolean>
  /** The live commerce app registered for the store (its handle), if any. */
  readonly liveCommerceAppForShop: (shop: string) => Repo<Option.Option<CommerceAppCredentials>>
  /** The commerce app by id while it is live (not disabled). */
  readonly liveCommerceApp: (id: string) => Repo<Option.Option<CommerceAppCredentials>>
  /** The live workspace's healthcare-agency flag, its row locked until the transaction ends. */
  readonly lockWorkspaceFlag: (id: string) => Repo<Option.Option<boolean>>
  /** Upserts the app's grant on the profile with these connect scopes (clearing a revocation); answers its id. */
  readonly upsertGrant: (appId: string, profileId: string, connectScopes: ReadonlyArray<ConnectScope>) => Repo<string>
  /** Revokes the live grants of the app, or on the profile. */
  readonly revokeGrants: (which: { readonly appId: string } | { readonly profileId: string }) => Repo<void>
  /** Records the app's DPA as accepted in `version` by `acceptedBy`. */
  readonly acceptDpa: (appId: string, version: string, acceptedBy: string) => Repo<void>
  readonly withdrawDpa: (appId: string) => Repo<void>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
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
        Effect.map(
          sql`UPDATE oauth_apps SET deleted_at = now(), updated_at = now() WHERE id = ${id} AND deleted_at IS NULL RETURNING id`,
          (deleted) => deleted.length > 0
        )

      const setClientSecret = (id: string, hash: string) =>
        firstApp(sql`UPDATE oauth_apps SET client_secret_hash = ${hash}, updated_at = now()
                     WHERE id = ${id} AND deleted_at IS NULL RETURNING ${appColumns}`)

      const setJwtSecret = (id: string, encrypted: string) =>
        firstApp(sql`UPDATE oauth_apps SET jwt_secret_encrypted = ${encrypted}, updated_at = now()
                     WHERE id = ${id} AND deleted_at IS NULL RETURNING ${appColumns}`)

      const firstPresent = decodeFirstRow(Schema.Struct({ present: Schema.Boolean }))
      const workspaceExists = (id: string) =>
        Effect.map(
          firstPresent(sql`SELECT EXISTS (SELECT 1 FROM workspaces WHERE id = ${id} AND archived_at IS NULL) AS present`),
          Option.exists((row) => row.present)
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

      const credentialColumns = sql`id, client_id, client_secret_encrypted, scopes`
      const firstCredentials = decodeFirstRow(CommerceAppCredentials)
      const liveCommerceAppForShop = (shop: string) =>
        firstCredentials(sql`SELECT ${credentialColumns} FROM commerce_apps WHERE shop = ${shop} AND disabled_at IS NULL`)
      // FOR SHARE: a connection made through the app waits for a kill switch running on it, and then sees it dead.
      const liveCommerceApp = (id: string) =>
        firstCredentials(sql`SELECT ${credentialColumns} FROM commerce_apps WHERE id = ${id} AND disabled_at IS NULL FOR SHARE`)

      const FlagRow = Schema.Struct({ is_healthcare_agency: Schema.Boolean })
      const firstFlag = decodeFirstRow(FlagRow)
      const lockWorkspaceFlag = (id: string) =>
        Effect.map(
          firstFlag(sql`SELECT is_healthcare_agency FROM workspaces WHERE id = ${id} AND archived_at IS NULL FOR UPDATE`),
          Option.map((row) => row.is_healthcare_agency)
        )

      const firstGrantId = decodeFirstRow(Schema.Struct({ id: Schema.String }))
      const upsertGrant = (appId: string, profileId: string, connectScopes: ReadonlyArray<ConnectScope>) =>
        Effect.map(
          firstGrantId(sql`
            INSERT INTO grants (id, app_id, profile_id, connect_scopes)
            VALUES (${crypto.randomUUID()}, ${appId}, ${profileId}, ${connectScopes})
            ON CONFLICT (app_id, profile_id) DO UPDATE
              SET connect_scopes = EXCLUDED.connect_scopes, revoked_at = NULL, updated_at = now()
            RETURNING id`),
          Option.match({ onNone: () => "", onSome: (row) => row.id })
        )

      const revokeGrants = (which: { readonly appId: string } | { readonly profileId: string }) =>
        Effect.asVoid(
          "appId" in which
            ? sql`UPDATE grants SET revoked_at = now() WHERE app_id = ${which.appId} AND revoked_at IS NULL`
            : sql`UPDATE grants SET revoked_at = now() WHERE profile_id = ${which.profileId} AND revoked_at IS NULL`
        )

      const acceptDpa = (appId: string, version: string, acceptedBy: string) =>
        Effect.asVoid(sql`
          UPDATE oauth_apps SET dpa_status = 'accepted', dpa_version = ${version}, dpa_accepted_at = now(),
                                dpa_accepted_by = ${acceptedBy}, updated_at = now()
          WHERE id = ${appId}`)

      const withdrawDpa = (appId: string) =>
        Effect.asVoid(sql`UPDATE oauth_apps SET dpa_status = 'withdrawn', updated_at = now() WHERE id = ${appId}`)

      return {
        ...atDatabaseBoundary({
          lockWorkspaceFlag,
          upsertGrant,
          revokeGrants,
          acceptDpa,
          withdrawDpa,
          insertApp,
          listApps: ({ limit, after }: { readonly limit: number; readonly after: Option.Option<Keyset> }) => listApps(limit, after),
          findApp,
          updateApp,
          deleteApp,
          setClientSecret,
          setJwtSecret,
          workspaceExists,
          insertCommerceApp,
          listCommerceApps,
          disableCommerceApp,
          liveCommerceAppForShop,
          liveCommerceApp
        }),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
