/**
 * Partner provisioning: an OAuth app creates (or re-consents) the profile of one of its
 * merchants, keyed by (app, external_ref). One transaction per call, the profile row locked,
 * so replays and concurrent first calls converge on one profile.
 */
import { Context, Effect, Layer, Option } from "effect"
import { RateLimiter } from "effect/persistence/RateLimiter"
import {
  type DatabaseUnavailable,
  HealthcareScopeForbidden,
  InsufficientScope,
  InvalidState,
  NotFound,
  RateLimitExceeded
} from "../../../schema/errors.ts"
import { type ConnectScope, isHealthcareFamily, mintableScopes } from "../../../schema/scopes.ts"
import type { AdoptProfile, ProvisionedProfile, ProvisionProfile } from "../../../schema/tenancy.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import { AdminRepo } from "../admin/repo.ts"
import { ApiKeysRepo } from "../api-keys/repo.ts"
import { type AppPrincipal, CredentialStore, type PrincipalShape } from "../../kernel/principal.ts"
import { consumeBucket } from "../../platform/rate-limit.ts"
import { isUuid } from "../../../schema/common.ts"
import { movePrivacyMode } from "../privacy.ts"
import { MembersRepo } from "../members/repo.ts"
import { WorkspacesRepo } from "../workspaces/repo.ts"
import { ProfileLifecycle, TrackingKeys } from "./lifecycle.ts"
import { ProvisionedProfiles } from "./provisioned.ts"
import { type OwnedRow, type ProvisionedRow, TenancyRepo } from "./repo.ts"

const DEFAULT_CONNECT_SCOPES: ReadonlyArray<ConnectScope> = ["connections"]

/** Profile provisioning calls per hour per app credential (its own bucket). */
export const PROVISIONING_CALLS_PER_HOUR = 200

const healthcareForbidden = () =>
  new HealthcareScopeForbidden({
    message: "analytics_pii cannot be granted on a healthcare-family profile; ask for analytics.",
    reason: "healthcare_family_profile"
  })

/** Unknown, another app's, human-created (and, for adopt, archived): one identical answer. */
const noSuchProfile = () => new NotFound({ message: "No such profile." })

/** What an app provisions: the body, with its required `external_ref`. */
export type AppProvision = ProvisionProfile & { readonly external_ref: string }

/** A person creating a profile (`profiles:write`). */
export type PersonPrincipal = Extract<PrincipalShape, { readonly kind: "user_token" | "session" }>

export interface NewProfileByPerson {
  readonly workspaceId: string
  readonly name: string
  readonly currency: string | undefined
  readonly timeZone: string | undefined
}

export interface ArchiveResult {
  readonly profileId: string
  readonly workspaceId: string
  readonly workspaceArchived: boolean
}

export class Provisioning extends Context.Service<Provisioning, {
  readonly provision: (
    app: AppPrincipal,
    input: AppProvision
  ) => Effect.Effect<ProvisionedProfile, InvalidState | HealthcareScopeForbidden | RateLimitExceeded | DatabaseUnavailable>
  /** The `profiles:write` branch: a profile in a workspace the person owns or administers. */
  readonly createForPerson: (
    person: PersonPrincipal,
    input: NewProfileByPerson
  ) => Effect.Effect<ProvisionedProfile, NotFound | InsufficientScope | DatabaseUnavailable>
  /** The lifecycle table's delete: archives profile and workspace, or 409 while the workspace holds another profile. */
  readonly archive: (app: AppPrincipal, profileId: string) => Effect.Effect<ArchiveResult, NotFound | InvalidState | DatabaseUnavailable>
  /** Stamps an external ref on a profile provisioned before refs existed. */
  readonly adopt: (
    app: AppPrincipal,
    profileId: string,
    input: AdoptProfile
  ) => Effect.Effect<ProvisionedProfile, NotFound | InvalidState | HealthcareScopeForbidden | DatabaseUnavailable>
  /** The oldest live profile of the workspace with this name (the operator's quickstart reuses it). */
  readonly findLiveByName: (workspaceId: string, name: string) => Effect.Effect<Option.Option<string>, DatabaseUnavailable>
}>()("svc/Provisioning") {
  static readonly layer = Layer.effect(Provisioning)(
    Effect.gen(function*() {
      const repo = yield* TenancyRepo
      const keys = yield* ApiKeysRepo
      const admin = yield* AdminRepo
      const provisioned = yield* ProvisionedProfiles
      const workspaces = yield* WorkspacesRepo
      const members = yield* MembersRepo
      const tracking = yield* TrackingKeys
      const lifecycle = yield* ProfileLifecycle
      const audit = yield* AuditLog
      const limiter = yield* RateLimiter
      const credentials = yield* CredentialStore
      /** After a committed change that revoked keys or moved access: this runner stops them at once. */
      const forgetCached = <A>(result: A) => Effect.as(credentials.forget, result)
      const movePrivacy = movePrivacyMode(repo, keys, audit)

      const meter = (app: AppPrincipal) =>
        Effect.asVoid(consumeBucket(limiter, {
          key: `provision:${app.appId}`,
          limit: PROVISIONING_CALLS_PER_HOUR,
          window: "1 hour",
          exceeded: {
            message: `At most ${PROVISIONING_CALLS_PER_HOUR} profile provisioning calls per hour per app.`,
            reason: "provisioning_bucket"
          }
        }))

      const render = (
        row: ProvisionedRow,
        created: boolean,
        input: Pick<ProvisionProfile, "privacy_mode">,
        revokedKeys: number,
        trackingKey: string
      ): ProvisionedProfile => ({
        profile_id: row.profile_id,
        workspace_id: row.workspace_id,
        external_ref: row.external_ref,
        created,
        name: row.name,
        email: row.email,
        currency: row.currency,
        reporting_currency: row.reporting_currency,
        time_zone: row.time_zone,
        tracking_key: trackingKey,
        scopes: row.grant_scopes ?? [],
        ...(input.privacy_mode === undefined ? {} : { privacy_mode: row.privacy_mode }),
        platform_safe_target: row.platform_safe_target,
        entitlements: { svc_attribution: row.attribution_enabled },
        revoked_keys: revokedKeys
      })

      const reread = (app: AppPrincipal, externalRef: string) =>
        Effect.flatMap(
          repo.findProvisionedForUpdate(app.appId, externalRef),
          Option.match({ onNone: () => Effect.die("provisioned profile vanished inside its transaction"), onSome: Effect.succeed })
        )

      const create = Effect.fn("Provisioning.create")(function*(app: AppPrincipal, input: AppProvision, requested: ReadonlyArray<ConnectScope>) {
        const privacyMode = input.privacy_mode ?? "standard"
        if (privacyMode !== "standard" && requested.includes("analytics_pii")) return yield* healthcareForbidden()
        const claimed = yield* provisioned.insert({
          appId: app.appId,
          externalRef: input.external_ref,
          name: input.name ?? input.external_ref,
          email: input.email ?? null,
          currency: input.currency ?? null,
          reportingCurrency: input.reporting_currency ?? input.currency ?? null,
          privacyMode,
          connectScopes: requested
        })
        if (Option.isNone(claimed)) return Option.none<ProvisionedProfile>()
        const row = yield* reread(app, input.external_ref)
        const trackingKey = yield* tracking.ensure(row.profile_id)
        yield* audit.record({
          actor: app,
          action: "profile.provisioned",
          targetKind: "profile",
          targetId: row.profile_id,
          profileId: row.profile_id,
          workspaceId: row.workspace_id,
          details: { external_ref: input.external_ref, scopes: requested, privacy_mode: privacyMode }
        })
        return Option.some(render(row, true, input, 0, trackingKey))
      })

      const replay = Effect.fn("Provisioning.replay")(function*(
        app: AppPrincipal,
        input: AppProvision,
        requested: ReadonlyArray<ConnectScope>,
        existing: ProvisionedRow
      ) {
        const moved = yield* movePrivacy(app, existing, input.privacy_mode)
        const privacyMode = moved.privacyMode
        let revoked = moved.revokedKeys ?? 0
        const healthcare = isHealthcareFamily({ privacy_mode: privacyMode, is_healthcare_agency: existing.is_healthcare_agency })
        if (healthcare && requested.includes("analytics_pii")) return yield* healthcareForbidden()
        // `attribution` belongs to the entitlement, not to the app's request.
        const connectScopes: ReadonlyArray<ConnectScope> = existing.attribution_enabled
          ? [...new Set<ConnectScope>([...requested, "attribution"])]
          : requested
        const grantId = yield* admin.upsertGrant(app.appId, existing.profile_id, connectScopes)
        revoked += (yield* keys.revokeKeys({ kind: "grant", grantId, keepingScopes: mintableScopes(connectScopes, healthcare) })).length
        const row = yield* reread(app, input.external_ref)
        // Profiles provisioned before tracking keys existed get theirs on the next replay.
        const trackingKey = yield* tracking.ensure(row.profile_id)
        yield* audit.record({
          actor: app,
          action: "profile.reprovisioned",
          targetKind: "profile",
          targetId: row.profile_id,
          profileId: row.profile_id,
          workspaceId: row.workspace_id,
          details: { scopes: connectScopes, privacy_mode: privacyMode, revoked_keys: revoked }
        })
        return render(row, false, input, revoked, trackingKey)
      })

      const provision = Effect.fn("Provisioning.provision")(function*(app: AppPrincipal, input: AppProvision) {
        yield* meter(app)
        const requested: ReadonlyArray<ConnectScope> = [...new Set(input.scopes ?? DEFAULT_CONNECT_SCOPES)]
        return yield* Effect.gen(function*() {
          // A concurrent first call may win the ref between our look-up and our insert: look again.
          for (let attempt = 0; attempt < 2; attempt++) {
            const existing = yield* repo.findProvisionedForUpdate(app.appId, input.external_ref)
            if (Option.isSome(existing)) return yield* replay(app, input, requested, existing.value)
            const created = yield* create(app, input, requested)
            if (Option.isSome(created)) return created.value
          }
          return yield* Effect.die("provisioning did not converge")
        }).pipe(
          repo.transaction,
          Effect.flatMap((result) => result.revoked_keys > 0 ? forgetCached(result) : Effect.succeed(result))
        )
      })

      const owned = (app: AppPrincipal, profileId: string) =>
        isUuid(profileId)
          ? Effect.flatMap(
            repo.findOwnedForUpdate(app.appId, profileId.toLowerCase()),
            Option.match({ onNone: () => Effect.fail(noSuchProfile()), onSome: (row) => Effect.succeed<OwnedRow>(row) })
          )
          : Effect.fail(noSuchProfile())

      /** The lifecycle table's cascade, in the caller's transaction; answers the keys it revoked. */
      const archiveCascade = Effect.fn("Provisioning.archiveCascade")(function*(profileId: string, workspaceId: string) {
        yield* repo.markArchived(profileId)
        yield* workspaces.archiveWithProfile(workspaceId)
        yield* workspaces.endMemberships(workspaceId)
        yield* members.endProfileMemberships(profileId)
        yield* members.revokeInvitations(workspaceId)
        yield* admin.revokeGrants({ profileId })
        const revoked = yield* keys.revokeKeys({ kind: "workspace", workspaceId })
        // Webhook subscriptions paused; syncs, structure and connections deleted (the layers above, ./lifecycle.ts).
        yield* lifecycle.archived({ profileId, workspaceId })
        return revoked.length
      })

      const archive = Effect.fn("Provisioning.archive")(function*(app: AppPrincipal, profileId: string) {
        return yield* Effect.gen(function*() {
          const row = yield* owned(app, profileId)
          const result = { profileId: row.profile_id, workspaceId: row.workspace_id }
          if (row.archived) return { ...result, workspaceArchived: row.workspace_archived }
          if (row.other_live_profiles > 0) {
            return yield* new InvalidState({
              message: "The profile's workspace holds another live profile; archive that one first.",
              reason: "workspace_holds_other_profiles"
            })
          }
          const revokedKeys = yield* archiveCascade(row.profile_id, row.workspace_id)
          yield* audit.record({
            actor: app,
            action: "profile.archived",
            targetKind: "profile",
            targetId: row.profile_id,
            profileId: row.profile_id,
            workspaceId: row.workspace_id,
            details: { workspace_archived: true, revoked_keys: revokedKeys }
          })
          return { ...result, workspaceArchived: true }
        }).pipe(repo.transaction, Effect.flatMap(forgetCached))
      })

      const adopt = Effect.fn("Provisioning.adopt")(function*(app: AppPrincipal, profileId: string, input: AdoptProfile) {
        const requested: ReadonlyArray<ConnectScope> = [...new Set(input.scopes ?? DEFAULT_CONNECT_SCOPES)]
        return yield* Effect.gen(function*() {
          const row = yield* owned(app, profileId)
          if (row.archived || row.grant_id === null || row.grant_revoked) return yield* noSuchProfile()
          if (isHealthcareFamily(row) && requested.includes("analytics_pii")) return yield* healthcareForbidden()
          const asProvisioned = (externalRef: string): ProvisionedRow => ({ ...row, external_ref: externalRef })
          if (row.external_ref !== null) {
            if (row.external_ref === input.external_ref) {
              return render(asProvisioned(row.external_ref), false, {}, 0, yield* tracking.ensure(row.profile_id))
            }
            return yield* new InvalidState({ message: "The profile already carries another external_ref.", reason: "external_ref_set" })
          }
          if (!(yield* repo.stampExternalRef(app.appId, row.profile_id, input.external_ref))) {
            return yield* new InvalidState({
              message: "Another live profile of this app already carries that external_ref.",
              reason: "external_ref_taken"
            })
          }
          const connectScopes: ReadonlyArray<ConnectScope> = row.attribution_enabled
            ? [...new Set<ConnectScope>([...requested, "attribution"])]
            : requested
          yield* admin.upsertGrant(app.appId, row.profile_id, connectScopes)
          const stamped = yield* reread(app, input.external_ref)
          yield* audit.record({
            actor: app,
            action: "profile.adopted",
            targetKind: "profile",
            targetId: row.profile_id,
            profileId: row.profile_id,
            workspaceId: row.workspace_id,
            details: { external_ref: input.external_ref, scopes: connectScopes }
          })
          return render(stamped, true, {}, 0, yield* tracking.ensure(row.profile_id))
        }).pipe(repo.transaction)
      })

      const createForPerson = Effect.fn("Provisioning.createForPerson")(function*(
        person: PersonPrincipal,
        input: NewProfileByPerson
      ) {
        if (!isUuid(input.workspaceId)) return yield* new NotFound({ message: "No such workspace." })
        return yield* Effect.gen(function*() {
          const role = yield* repo.workspaceRoleForUpdate(input.workspaceId.toLowerCase(), person.userId)
          if (Option.isNone(role)) return yield* new NotFound({ message: "No such workspace." })
          if (role.value !== "owner" && role.value !== "admin") {
            return yield* new InsufficientScope({
              message: person.kind === "user_token"
                ? `This token lacks profiles:write in this workspace: the token's MCP grant allows it; the person's membership (${role.value}) does not allow profiles:write.`
                : `Your membership (${role.value}) does not allow creating profiles in this workspace.`,
              reason: "missing_scope:profiles:write"
            })
          }
          if (person.kind === "user_token" && !(yield* repo.mcpWritebackEnabled(input.workspaceId.toLowerCase()))) {
            return yield* new InsufficientScope({
              message: "This workspace does not let MCP user tokens write (mcp_writeback_enabled is off in its MCP settings).",
              reason: "mcp_writeback_disabled"
            })
          }
          const row = yield* repo.insertPersonProfile({
            workspaceId: input.workspaceId.toLowerCase(),
            userId: person.userId,
            name: input.name,
            currency: input.currency ?? null,
            timeZone: input.timeZone ?? "UTC"
          })
          const trackingKey = yield* tracking.ensure(row.profile_id)
          yield* audit.record({
            actor: person,
            action: "profile.created",
            targetKind: "profile",
            targetId: row.profile_id,
            profileId: row.profile_id,
            workspaceId: row.workspace_id,
            details: { name: row.name }
          })
          return {
            profile_id: row.profile_id,
            workspace_id: row.workspace_id,
            external_ref: null,
            created: true,
            name: row.name,
            email: null,
            currency: row.currency,
            reporting_currency: row.reporting_currency,
            time_zone: row.time_zone,
            tracking_key: trackingKey,
            scopes: [],
            platform_safe_target: "existing",
            // A profile a person created has no connect-broker tier: every feature is on.
            entitlements: { svc_attribution: true },
            revoked_keys: 0
          } satisfies ProvisionedProfile
        }).pipe(repo.transaction)
      })

      const findLiveByName = Effect.fn("Provisioning.findLiveByName")(function*(workspaceId: string, name: string) {
        return yield* repo.findLiveByName(workspaceId, name)
      })

      return { provision, createForPerson, archive, adopt, findLiveByName }
    })
  ).pipe(Layer.provide([
    TenancyRepo.layer,
    ProvisionedProfiles.layer,
    WorkspacesRepo.layer,
    MembersRepo.layer,
    ApiKeysRepo.layer,
    AdminRepo.layer,
    AuditLog.layer
  ]))
}
