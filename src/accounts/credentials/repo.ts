/** SQL of credential resolution: a presented key, token, app secret or session cookie, by digest, and a person's standing on a profile. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { ProfileRole, WorkspaceRole } from "../../../schema/members.ts"
import { atDatabaseBoundary, decodeFirstRow } from "../../platform/database.ts"

export const ApiKeyRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  workspace_id: Schema.String,
  scopes: Schema.Array(Schema.String),
  oauth_app_id: Schema.NullOr(Schema.String),
  rate_limit_per_minute: Schema.Int,
  attribution_enabled: Schema.Boolean
})

export const UserTokenRow = Schema.Struct({
  id: Schema.String,
  user_id: Schema.String,
  grants: Schema.Array(Schema.String),
  rate_limit_units_per_minute: Schema.Int
})

export const AppRow = Schema.Struct({
  id: Schema.String,
  client_id: Schema.String,
  client_secret_hash: Schema.String,
  rate_tier: Schema.Literals(["standard", "elevated", "internal"])
})

export const SessionRow = Schema.Struct({ id: Schema.String, user_id: Schema.String })

export const MembershipRow = Schema.Struct({
  profile_id: Schema.String,
  workspace_id: Schema.String,
  attribution_enabled: Schema.Boolean,
  workspace_role: WorkspaceRole,
  profile_role: Schema.NullOr(ProfileRole),
  permissions: Schema.NullOr(Schema.Array(Schema.String)),
  mcp_writeback_enabled: Schema.Boolean
})

/**
 * Only app-provisioned profiles start on the connect-broker tier; a profile a person created
 * has every feature. (SQL over `p` = profiles.)
 */
const ATTRIBUTION_ENABLED = `(p.provisioned_by_app_id IS NULL OR COALESCE((
  SELECT e.enabled FROM entitlements e WHERE e.profile_id = p.id AND e.feature = 'svc_attribution'), false))`

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class CredentialsRepo extends Context.Service<CredentialsRepo, {
  /** A live, unexpired key on a live profile, by the digest of its secret. */
  readonly apiKey: (digest: string) => Repo<Option.Option<typeof ApiKeyRow.Type>>
  /** A live, unexpired user token by the digest of its secret. */
  readonly userToken: (digest: string) => Repo<Option.Option<typeof UserTokenRow.Type>>
  /** A live (not deleted) app by its public client id, with its secret's digest. */
  readonly app: (clientId: string) => Repo<Option.Option<typeof AppRow.Type>>
  /** A live, unexpired session by the digest of its cookie. */
  readonly session: (digest: string) => Repo<Option.Option<typeof SessionRow.Type>>
  /**
   * The person's standing on a live profile of a live workspace: an owner, admin or analyst of
   * the workspace, or a live member of the profile; None otherwise.
   */
  readonly membership: (userId: string, profileId: string) => Repo<Option.Option<typeof MembershipRow.Type>>
}>()("svc/CredentialsRepo") {
  static readonly layer = Layer.effect(CredentialsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstKey = decodeFirstRow(ApiKeyRow)
      const firstToken = decodeFirstRow(UserTokenRow)
      const firstApp = decodeFirstRow(AppRow)
      const firstSession = decodeFirstRow(SessionRow)
      const firstMembership = decodeFirstRow(MembershipRow)

      const apiKey = (digest: string) =>
        firstKey(sql`
          SELECT k.id, k.profile_id, k.workspace_id, k.scopes, k.oauth_app_id, k.rate_limit_per_minute,
                 ${sql.literal(ATTRIBUTION_ENABLED)} AS attribution_enabled
          FROM api_keys k
          JOIN profiles p ON p.id = k.profile_id AND p.archived_at IS NULL
          WHERE k.secret_hash = ${digest} AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`)

      const userToken = (digest: string) =>
        firstToken(sql`
          SELECT id, user_id, grants, rate_limit_units_per_minute FROM user_tokens
          WHERE secret_hash = ${digest} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`)

      const app = (clientId: string) =>
        firstApp(sql`
          SELECT id, client_id, client_secret_hash, rate_tier FROM oauth_apps
          WHERE client_id = ${clientId} AND deleted_at IS NULL`)

      const session = (digest: string) =>
        firstSession(sql`
          SELECT id, user_id FROM sessions WHERE secret_hash = ${digest} AND revoked_at IS NULL AND expires_at > now()`)

      const membership = (userId: string, profileId: string) =>
        firstMembership(sql`
          SELECT p.id AS profile_id, p.workspace_id, ${sql.literal(ATTRIBUTION_ENABLED)} AS attribution_enabled,
                 m.role AS workspace_role, pm.role AS profile_role, pm.permissions,
                 COALESCE((SELECT s.mcp_writeback_enabled FROM workspace_mcp_settings s WHERE s.workspace_id = p.workspace_id),
                          false) AS mcp_writeback_enabled
          FROM profiles p
          JOIN workspaces w ON w.id = p.workspace_id AND w.archived_at IS NULL
          JOIN workspace_memberships m ON m.workspace_id = p.workspace_id AND m.user_id = ${userId} AND m.removed_at IS NULL
          LEFT JOIN profile_memberships pm ON pm.profile_id = p.id AND pm.user_id = ${userId} AND pm.removed_at IS NULL
          WHERE p.id = ${profileId} AND p.archived_at IS NULL
            AND (m.role IN ('owner', 'admin', 'analyst') OR pm.user_id IS NOT NULL)`)

      return atDatabaseBoundary({ apiKey, userToken, app, session, membership })
    })
  )
}
