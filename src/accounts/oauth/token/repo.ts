/** SQL of the OAuth token and revocation endpoints. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, orDatabaseUnavailable } from "../../../platform/database.ts"

export const ClientRow = Schema.Struct({
  id: Schema.String,
  client_id: Schema.String,
  client_secret_hash: Schema.String,
  rate_tier: Schema.Literals(["standard", "elevated", "internal"])
})
export type ClientRow = typeof ClientRow.Type

/** What decides whether a profile is healthcare-family (S5). */
export const HealthcareSettings = Schema.Struct({
  privacy_mode: Schema.String,
  is_healthcare_agency: Schema.Boolean
})
export type HealthcareSettings = typeof HealthcareSettings.Type

export const GrantRow = Schema.Struct({
  grant_id: Schema.String,
  connect_scopes: Schema.Array(Schema.String),
  profile_id: Schema.String,
  workspace_id: Schema.String,
  ...HealthcareSettings.fields
})
export type GrantRow = typeof GrantRow.Type

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class OAuthRepo extends Context.Service<OAuthRepo, {
  /** A live (not deleted) app by its public client id. */
  readonly findClient: (clientId: string) => Repo<Option.Option<ClientRow>>
  /** The app's live grant on a live profile of a live workspace, with the profile's healthcare settings. */
  readonly findLiveGrant: (appId: string, profileId: string) => Repo<Option.Option<GrantRow>>
  /**
   * The profile's healthcare settings, read again and share-locked until the transaction ends:
   * a concurrent switch to healthcare-family either is seen here or waits for this commit, so
   * its revocation pass sees the new key.
   */
  readonly lockHealthcareSettings: (profileId: string) => Repo<Option.Option<HealthcareSettings>>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/OAuthRepo") {
  static readonly layer = Layer.effect(OAuthRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      const firstClient = decodeFirstRow(ClientRow)
      const firstGrant = decodeFirstRow(GrantRow)
      const firstSettings = decodeFirstRow(HealthcareSettings)

      const findClient = (clientId: string) =>
        firstClient(sql`
          SELECT id, client_id, client_secret_hash, rate_tier FROM oauth_apps
          WHERE client_id = ${clientId} AND deleted_at IS NULL`)

      const findLiveGrant = (appId: string, profileId: string) =>
        firstGrant(sql`
          SELECT g.id AS grant_id, g.connect_scopes, p.id AS profile_id, p.workspace_id, p.privacy_mode,
                 w.is_healthcare_agency
          FROM grants g
          JOIN profiles p ON p.id = g.profile_id AND p.archived_at IS NULL
          JOIN workspaces w ON w.id = p.workspace_id AND w.archived_at IS NULL
          WHERE g.app_id = ${appId} AND g.profile_id = ${profileId} AND g.revoked_at IS NULL`)

      const lockHealthcareSettings = (profileId: string) =>
        firstSettings(sql`
          SELECT p.privacy_mode, w.is_healthcare_agency
          FROM profiles p JOIN workspaces w ON w.id = p.workspace_id
          WHERE p.id = ${profileId}
          FOR SHARE OF p, w`)

      return {
        ...atDatabaseBoundary({ findClient, findLiveGrant, lockHealthcareSettings }),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
