/**
 * The owner of `profiles` (with their own DPA and BAA); the SQL of partner provisioning: the
 * profile an app provisioned under an external ref. Provisioning and archiving write the other
 * tables through their owners, composed by the services (./provisioned.ts, ./service.ts) in one transaction.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { ConnectScope } from "../../../schema/scopes.ts"
import { PrivacyMode } from "../../../schema/tenancy.ts"
import { atDatabaseBoundary, decodeFirstRow, orDatabaseUnavailable } from "../../platform/database.ts"

export const ProvisionedRow = Schema.Struct({
  profile_id: Schema.String,
  workspace_id: Schema.String,
  external_ref: Schema.String,
  name: Schema.String,
  email: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  reporting_currency: Schema.NullOr(Schema.String),
  time_zone: Schema.String,
  privacy_mode: PrivacyMode,
  platform_safe_target: Schema.Literals(["existing", "clean"]),
  is_healthcare_agency: Schema.Boolean,
  attribution_enabled: Schema.Boolean,
  grant_id: Schema.NullOr(Schema.String),
  grant_scopes: Schema.NullOr(Schema.Array(Schema.String)),
  grant_revoked: Schema.Boolean
})
export type ProvisionedRow = typeof ProvisionedRow.Type

/** A profile an app provisioned, by id: archived or not, stamped with an external ref or not. */
export const OwnedRow = Schema.Struct({
  ...ProvisionedRow.fields,
  external_ref: Schema.NullOr(Schema.String),
  archived: Schema.Boolean,
  workspace_archived: Schema.Boolean,
  other_live_profiles: Schema.Int
})
export type OwnedRow = typeof OwnedRow.Type

export interface NewProvisionedProfile {
  readonly appId: string
  /** Null for a profile created at OAuth consent in email mode (it carries no external ref). */
  readonly externalRef: string | null
  readonly name: string
  readonly email: string | null
  readonly currency: string | null
  readonly reportingCurrency: string | null
  readonly privacyMode: "standard" | "platform_safe" | "hipaa"
  readonly connectScopes: ReadonlyArray<ConnectScope>
}

export interface NewPersonProfile {
  readonly workspaceId: string
  readonly userId: string
  readonly name: string
  readonly currency: string | null
  readonly timeZone: string
}

export const PersonProfileRow = Schema.Struct({
  profile_id: Schema.String,
  workspace_id: Schema.String,
  name: Schema.String,
  currency: Schema.NullOr(Schema.String),
  reporting_currency: Schema.NullOr(Schema.String),
  time_zone: Schema.String
})
export type PersonProfileRow = typeof PersonProfileRow.Type

export const HealthcareSettingsRow = Schema.Struct({ privacy_mode: Schema.String, is_healthcare_agency: Schema.Boolean })
export type HealthcareSettingsRow = typeof HealthcareSettingsRow.Type

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class TenancyRepo extends Context.Service<TenancyRepo, {
  /** The live profile `appId` provisioned under `externalRef`, locked for the rest of the transaction. */
  readonly findProvisionedForUpdate: (appId: string, externalRef: string) => Repo<Option.Option<ProvisionedRow>>
  /**
   * Inserts the provisioned profile into its (new) workspace; false when the ref was taken
   * concurrently. Workspace, grant, entitlement row and owner are the caller's (ProvisionedProfiles).
   */
  readonly claimProvisioned: (profileId: string, workspaceId: string, profile: NewProvisionedProfile) => Repo<boolean>
  readonly setPrivacyMode: (profileId: string, mode: "platform_safe" | "hipaa") => Repo<void>
  /** The conversion-sync catalog's PUT: any mode, and the Platform-Safe target. */
  readonly setPrivacySettings: (profileId: string, mode: PrivacyMode, target: "existing" | "clean") => Repo<void>
  /** A profile `appId` provisioned (archived ones included), locked; None for unknown, foreign or human-created. */
  readonly findOwnedForUpdate: (appId: string, profileId: string) => Repo<Option.Option<OwnedRow>>
  /** The app that provisioned a live profile (the RPC entitlement call acts within its grant); None for a person's profile. */
  readonly provisioningAppOf: (profileId: string) => Repo<Option.Option<{ readonly app_id: string; readonly client_id: string }>>
  /** Marks the profile archived (the lifecycle table's cascade is the caller's, Provisioning.archive). */
  readonly markArchived: (profileId: string) => Repo<void>
  /** The person's role in a live workspace (live membership), the workspace row locked; None otherwise. */
  readonly workspaceRoleForUpdate: (workspaceId: string, userId: string) => Repo<Option.Option<string>>
  /** Whether the workspace lets MCP user tokens write (MCP settings; off until an owner or admin turns it on). */
  readonly mcpWritebackEnabled: (workspaceId: string) => Repo<boolean>
  /** A profile a person creates: no app, no grant, no tier. */
  readonly insertPersonProfile: (profile: NewPersonProfile) => Repo<PersonProfileRow>
  /** Stamps an external ref; false when another live profile of the app holds it. */
  readonly stampExternalRef: (appId: string, profileId: string, externalRef: string) => Repo<boolean>
  /** The oldest live profile of the workspace with this name. */
  readonly findLiveByName: (workspaceId: string, name: string) => Repo<Option.Option<string>>
  /** What decides whether a profile is healthcare-family (S5); None for an unknown profile. */
  readonly healthcareSettings: (profileId: string) => Repo<Option.Option<HealthcareSettingsRow>>
  /** Records the profile's own DPA or BAA as accepted in `version` by `acceptedBy`. */
  readonly acceptAgreement: (profileId: string, agreement: "dpa" | "baa", version: string, acceptedBy: string) => Repo<void>
  readonly withdrawAgreement: (profileId: string, agreement: "dpa" | "baa") => Repo<void>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/TenancyRepo") {
  static readonly layer = Layer.effect(TenancyRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstProvisioned = decodeFirstRow(ProvisionedRow)
      /** A provisioned profile with its workspace, entitlement and the app's grant (alias p, w, e, g). */
      const provisionedColumns = sql`
        p.id AS profile_id, p.workspace_id, p.external_ref, p.name, p.email, p.currency,
        w.reporting_currency, p.time_zone, p.privacy_mode, p.platform_safe_target, w.is_healthcare_agency,
        COALESCE(e.enabled, false) AS attribution_enabled,
        g.id AS grant_id, g.connect_scopes AS grant_scopes, (g.revoked_at IS NOT NULL) AS grant_revoked`
      const provisionedJoins = (appId: string) => sql`
        profiles p
        JOIN workspaces w ON w.id = p.workspace_id
        LEFT JOIN entitlements e ON e.profile_id = p.id AND e.feature = 'svc_attribution'
        LEFT JOIN grants g ON g.profile_id = p.id AND g.app_id = ${appId}`

      const findProvisionedForUpdate = (appId: string, externalRef: string) =>
        firstProvisioned(
            sql`
              SELECT ${provisionedColumns}
              FROM ${provisionedJoins(appId)}
              WHERE p.provisioned_by_app_id = ${appId} AND p.external_ref = ${externalRef} AND p.archived_at IS NULL
              FOR UPDATE OF p`
        )

      const claimProvisioned = (profileId: string, workspaceId: string, input: NewProvisionedProfile) =>
        // The partial unique index on (app, external_ref) decides between concurrent first calls.
        Effect.map(
          sql`
            INSERT INTO profiles (id, workspace_id, name, email, currency, external_ref, provisioned_by_app_id,
                                  provisioned_external_ref, scopes, privacy_mode)
            VALUES (${profileId}, ${workspaceId}, ${input.name}, ${input.email}, ${input.currency}, ${input.externalRef},
                    ${input.appId}, ${input.externalRef}, ${input.connectScopes}, ${input.privacyMode})
            ON CONFLICT (provisioned_by_app_id, external_ref) WHERE external_ref IS NOT NULL AND archived_at IS NULL
            DO NOTHING
            RETURNING id`,
          (rows) => rows.length > 0
        )

      const firstOwned = decodeFirstRow(OwnedRow)

      const firstApp = decodeFirstRow(Schema.Struct({ app_id: Schema.String, client_id: Schema.String }))
      const provisioningAppOf = (profileId: string) =>
        firstApp(
          sql`
            SELECT a.id::text AS app_id, a.client_id FROM profiles p JOIN oauth_apps a ON a.id = p.provisioned_by_app_id
            WHERE p.id = ${profileId} AND p.archived_at IS NULL`
        )
      const findOwnedForUpdate = (appId: string, profileId: string) =>
        firstOwned(
            sql`
              SELECT ${provisionedColumns},
                     (p.archived_at IS NOT NULL) AS archived, (w.archived_at IS NOT NULL) AS workspace_archived,
                     (SELECT count(*)::int FROM profiles o
                      WHERE o.workspace_id = p.workspace_id AND o.id <> p.id AND o.archived_at IS NULL) AS other_live_profiles
              FROM ${provisionedJoins(appId)}
              WHERE p.id = ${profileId} AND p.provisioned_by_app_id = ${appId}
              FOR UPDATE OF p`
        )

      const markArchived = (profileId: string) => Effect.asVoid(sql`UPDATE profiles SET archived_at = now() WHERE id = ${profileId}`)

      const stampExternalRef = (appId: string, profileId: string, externalRef: string) =>
        Effect.map(
          sql`UPDATE profiles SET external_ref = ${externalRef}, provisioned_external_ref = ${externalRef}
              WHERE id = ${profileId} AND NOT EXISTS (
                SELECT 1 FROM profiles o WHERE o.provisioned_by_app_id = ${appId} AND o.external_ref = ${externalRef}
                  AND o.archived_at IS NULL AND o.id <> ${profileId})
              RETURNING id`,
          (rows) => rows.length > 0
        )

      const firstRole = decodeFirstRow(Schema.Struct({ role: Schema.String }))
      const workspaceRoleForUpdate = (workspaceId: string, userId: string) =>
        Effect.map(
          firstRole(sql`
            SELECT m.role FROM workspaces w
            JOIN workspace_memberships m ON m.workspace_id = w.id AND m.user_id = ${userId} AND m.removed_at IS NULL
            WHERE w.id = ${workspaceId} AND w.archived_at IS NULL
            FOR UPDATE OF w`),
          Option.map((row) => row.role)
        )

      const firstPersonProfile = decodeFirstRow(PersonProfileRow)
      const insertPersonProfile = (input: NewPersonProfile) =>
        Effect.flatMap(
          firstPersonProfile(sql`
            WITH inserted AS (
              INSERT INTO profiles (id, workspace_id, name, currency, time_zone, created_by_user_id)
              VALUES (${crypto.randomUUID()}, ${input.workspaceId}, ${input.name}, ${input.currency}, ${input.timeZone},
                      ${input.userId})
              RETURNING id, workspace_id, name, currency, time_zone)
            SELECT i.id AS profile_id, i.workspace_id, i.name, i.currency, w.reporting_currency, i.time_zone
            FROM inserted i JOIN workspaces w ON w.id = i.workspace_id`),
          Option.match({ onNone: () => Effect.die("inserted profile not returned"), onSome: Effect.succeed })
        )

      const firstEnabled = decodeFirstRow(Schema.Struct({ enabled: Schema.Boolean }))
      const mcpWritebackEnabled = (workspaceId: string) =>
        Effect.map(
          firstEnabled(sql`SELECT mcp_writeback_enabled AS enabled FROM workspace_mcp_settings WHERE workspace_id = ${workspaceId}`),
          Option.exists((row) => row.enabled)
        )

      const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))
      const findLiveByName = (workspaceId: string, name: string) =>
        Effect.map(
          firstId(sql`
            SELECT id FROM profiles
            WHERE workspace_id = ${workspaceId} AND archived_at IS NULL AND name = ${name}
            ORDER BY created_at LIMIT 1`),
          Option.map((row) => row.id)
        )

      const firstHealthcare = decodeFirstRow(HealthcareSettingsRow)
      const healthcareSettings = (profileId: string) =>
        firstHealthcare(sql`
          SELECT p.privacy_mode, w.is_healthcare_agency FROM profiles p JOIN workspaces w ON w.id = p.workspace_id
          WHERE p.id = ${profileId}`)

      const setPrivacyMode = (profileId: string, mode: "platform_safe" | "hipaa") =>
        Effect.asVoid(sql`UPDATE profiles SET privacy_mode = ${mode} WHERE id = ${profileId}`)

      // The conversion-sync catalog's PUT (src/exports/catalog): the owner's mode and target.
      const setPrivacySettings = (profileId: string, mode: PrivacyMode, target: "existing" | "clean") =>
        Effect.asVoid(sql`UPDATE profiles SET privacy_mode = ${mode}, platform_safe_target = ${target} WHERE id = ${profileId}`)

      const acceptAgreement = (profileId: string, agreement: "dpa" | "baa", version: string, acceptedBy: string) =>
        Effect.asVoid(
          agreement === "dpa"
            ? sql`UPDATE profiles SET dpa_status = 'accepted', dpa_version = ${version}, dpa_accepted_at = now(),
                                      dpa_accepted_by = ${acceptedBy}
                  WHERE id = ${profileId}`
            : sql`UPDATE profiles SET baa_status = 'accepted', baa_version = ${version}, baa_accepted_at = now(),
                                      baa_accepted_by = ${acceptedBy}
                  WHERE id = ${profileId}`
        )

      const withdrawAgreement = (profileId: string, agreement: "dpa" | "baa") =>
        Effect.asVoid(
          agreement === "dpa"
            ? sql`UPDATE profiles SET dpa_status = 'withdrawn' WHERE id = ${profileId}`
            : sql`UPDATE profiles SET baa_status = 'withdrawn' WHERE id = ${profileId}`
        )

      return {
        ...atDatabaseBoundary({
          mcpWritebackEnabled,
          workspaceRoleForUpdate,
          insertPersonProfile,
          findOwnedForUpdate,
          provisioningAppOf,
          markArchived,
          stampExternalRef,
          findProvisionedForUpdate,
          claimProvisioned,
          setPrivacyMode,
          setPrivacySettings,
          findLiveByName,
          healthcareSettings,
          acceptAgreement,
          withdrawAgreement
        }),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
