/**
 * Platform-Safe (issue 20 part 4; api-concepts.md "Platform-safe target and clean dataset",
 * "Consent contract for automated ad-set rebuilds"; decisions 0089-0090): provisioning the
 * Clean Dataset (one neutral custom conversion per tracked outcome type, wired as a clean
 * destination), switching the target, and re-pointing ad sets at it: in place where the
 * platform allows, else by duplicate swap (copy created paused, ads copied, copy switched on,
 * original paused last and never deleted; `run_both` keeps the original running).
 */
import { Context, Effect, Layer, Option } from "effect"
import {
  AdplatformConnectionRequired,
  AdplatformUnavailable,
  AdplatformWritePermissionMissing,
  CleanDatasetHasLiveAdSets,
  ConsentRequired,
  type DatabaseUnavailable,
  InvalidState,
  NotFound,
  PlatformSafeRequired,
  RateLimitExceeded,
  type ValidationError
} from "../../../schema/errors.ts"
import {
  type AdSetToRecreate,
  type ProvisionAnswer,
  type ProvisionBody,
  type ProvisionChecks,
  REBUILD_CONSENT_LINES,
  REBUILD_CONSENT_VERSION,
  rebuildConsentText,
  type RebuildWarning,
  type RepointAnswer,
  type RepointBody,
  type RepointOutcome,
  type TargetAnswer,
  type TargetBody,
  type WireAdSetsBody
} from "../../../schema/platform-safe.ts"
import { type AdConnection, AdConnections } from "../../ads/actions/connections.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import type { PrincipalShape, ProfileContext } from "../../kernel/principal.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { DpaService } from "../../accounts/dpa/service.ts"
import { AdPlatform, type AdSetOptimization, type PromotedObject as PromotedObjectValue } from "../../connections/providers/adplatform/port.ts"
import type { ProviderError } from "../../connections/providers/errors.ts"
import type { ProviderSession } from "../../connections/providers/oauth/port.ts"
import { PrivacySettings } from "../../accounts/privacy.ts"
import { CatalogRepo, type CatalogRow } from "../catalog/repo.ts"
import { checkConsentContract } from "../consent.ts"
import { DestinationsRepo } from "../destinations/repo.ts"
import { sha256 } from "../pipeline/scrub.ts"
import { type CleanDatasetRow, PlatformSafeRepo, type RebuildRow, type StoredConversion } from "./repo.ts"

const MANAGE_ADS = "ads_management"
/** The current version and each locale's hash, as the 409 `consent_required` carries them. */
export const consentHint = () => ({
  version: REBUILD_CONSENT_VERSION,
  text_hashes: Object.fromEntries(
    (Object.keys(REBUILD_CONSENT_LINES) as Array<keyof typeof REBUILD_CONSENT_LINES>).map((l) => [l, sha256(rebuildConsentText(l))])
  )
})

/**
 * The consent contract for a rebuild (decision 0090): one version; 409 `consent_required`
 * carries it and its hashes, 422 when malformed (src/exports/consent.ts).
 */
export const checkConsent = (consent: unknown, nowMs: number): Effect.Effect<void, ConsentRequired | ValidationError> => {
  const hint = consentHint()
  return Effect.asVoid(checkConsentContract(consent, nowMs, {
    versions: [hint],
    fallback: hint,
    messages: {
      missing: "A rebuild confirmed by a key or token carries the person's consent.",
      unknownVersion: `The consent version is ${REBUILD_CONSENT_VERSION}.`,
      unknownHash: "text_hash is not the SHA-256 of the consent text in a supported locale.",
      tooOld: "The consent is older than 24 hours: ask the person again."
    }
  }))
}

/** The standard event a recreated ad set optimizes on, from the outcome type's name. */
export const standardEventOf = (outcomeType: string): string => {
  const key = outcomeType.toLowerCase()
  if (/purchase|order|sale|payment|paid/.test(key)) return "PURCHASE"
  if (/schedul|book|appointment/.test(key)) return "SCHEDULE"
  if (/regist|signup|sign_up/.test(key)) return "COMPLETE_REGISTRATION"
  if (/lead|form|quote/.test(key)) return "LEAD"
  if (/contact|call|chat|message/.test(key)) return "CONTACT"
  return "OTHER"
}

export type PlatformFailure = RateLimitExceeded | AdplatformWritePermissionMissing | AdplatformConnectionRequired | AdplatformUnavailable

export const fromProvider = (error: ProviderError): PlatformFailure => {
  switch (error._tag) {
    case "ProviderThrottled":
      return new RateLimitExceeded({
        message: "The ad platform is throttling this account; retry after the delay.",
        reason: "adplatform_throttled",
        retry_after_seconds: Math.max(1, Math.ceil(error.retryAfterSeconds))
      })
    case "ProviderPermissionMissing":
      return new AdplatformWritePermissionMissing({ message: "The ad-platform connection lacks the manage-advertisements grant. Reconnect it.", reconnect_required: true })
    case "ProviderAuthRevoked":
      return new AdplatformConnectionRequired({ message: "The ad-platform connection needs a reconnect.", reconnect_required: true })
    case "ProviderRefused":
      return new AdplatformUnavailable({
        message: "The ad platform refused the call.",
        provider: "adplatform",
        provider_status: error.status,
        provider_code: error.code,
        provider_message: error.detail
      })
    case "ProviderUnavailable":
      return new AdplatformUnavailable({ message: "The ad platform is unreachable; retry.", provider: "adplatform" })
  }
}

/** An ad-platform call with its provider errors as the documented codes (database errors pass). */
export const onPlatform = <A>(effect: Effect.Effect<A, ProviderError | DatabaseUnavailable>): Effect.Effect<A, PlatformFailure | DatabaseUnavailable> =>
  Effect.mapError(effect, (e) => (e._tag === "DatabaseUnavailable" ? e : fromProvider(e)))

export interface WireAdSetsAnswer extends Omit<RepointAnswer, "needs_recreate"> {
  readonly needs_duplicate_swap: ReadonlyArray<string>
}

type Failure = NotFound | PlatformSafeRequired | InvalidState | DatabaseUnavailable | PlatformFailure

export class PlatformSafe extends Context.Service<PlatformSafe, {
  readonly provision: (actor: PrincipalShape, profile: ProfileContext, body: ProvisionBody) => Effect.Effect<ProvisionAnswer, Failure>
  readonly target: (
    actor: PrincipalShape,
    profile: ProfileContext,
    body: TargetBody
  ) => Effect.Effect<TargetAnswer, Failure | CleanDatasetHasLiveAdSets>
  readonly repoint: (
    actor: PrincipalShape,
    profile: ProfileContext,
    body: RepointBody
  ) => Effect.Effect<RepointAnswer, Failure | ConsentRequired | ValidationError>
  readonly wireAdSets: (
    actor: PrincipalShape,
    profile: ProfileContext,
    body: WireAdSetsBody,
    destination: { readonly dataset_id: string; readonly connection_id: string },
    conversionKey: string
  ) => Effect.Effect<WireAdSetsAnswer, Failure | ConsentRequired | ValidationError>
}>()("svc/PlatformSafe") {
  static readonly layer = Layer.effect(PlatformSafe)(
    Effect.gen(function*() {
      const repo = yield* PlatformSafeRepo
      const catalog = yield* CatalogRepo
      const privacy = yield* PrivacySettings
      const destinations = yield* DestinationsRepo
      const adConnections = yield* AdConnections
      const sessions = yield* ConnectionSessions
      const platform = yield* AdPlatform
      const dpa = yield* DpaService
      const audit = yield* AuditLog


      const settings = Effect.fn("PlatformSafe.settings")(function*(profileId: string) {
        const row = yield* catalog.find(profileId, false)
        if (Option.isNone(row)) return yield* new NotFound({ message: "No such profile." })
        if (row.value.privacy_mode !== "platform_safe") {
          return yield* new PlatformSafeRequired({ message: "The profile's privacy mode is not platform_safe: set it in the conversion-sync catalog first." })
        }
        return row.value
      })

      /** The one usable ad-platform connection (the Clean Dataset's when there is one). */
      const connectionFor = Effect.fn("PlatformSafe.connectionFor")(function*(profileId: string, clean: Option.Option<CleanDatasetRow>) {
        const all = yield* adConnections.of(profileId)
        const usable = all.filter((c) => c.status !== "reconnect_required" && c.external_account_id !== null)
        const named = Option.flatMap(clean, (row) => Option.fromNullishOr(usable.find((c) => c.id === row.connection_id)))
        if (Option.isSome(named)) return named.value
        if (usable.length === 1 && usable[0] !== undefined) return usable[0]
        return yield* new AdplatformConnectionRequired({
          message: usable.length === 0 ? "The profile has no usable ad-platform connection." : "The profile has several ad-platform connections.",
          reason: usable.length === 0 ? "no_usable_connection" : "several_connections"
        })
      })

      const dpaStatus = (profileId: string) =>
        dpa.exportHold(profileId).pipe(
          Effect.map((hold) => (Option.isSome(hold) && hold.value === "dpa_not_accepted" ? "not_accepted" : "accepted")),
          Effect.catchTag("NotFound", () => Effect.succeed("not_accepted"))
        )

      const checksOf = Effect.fn("PlatformSafe.checks")(function*(row: CatalogRow, connection: AdConnection | null, target: CatalogRow["platform_safe_target"]) {
        const tracked = yield* repo.trackedTypes(row.profile_id)
        const mapped = yield* repo.mappedTypes(row.profile_id)
        return {
          privacy_mode: row.privacy_mode,
          adplatform_connection_id: connection === null ? null : connection.id,
          ads_management: connection !== null && connection.scopes.includes(MANAGE_ADS),
          outcome_types_tracked: tracked,
          outcome_types_mapped: mapped,
          dpa_status: yield* dpaStatus(row.profile_id),
          platform_safe_target: target
        } satisfies ProvisionChecks
      })

      const answer = (
        status: ProvisionAnswer["status"],
        clean: Option.Option<CleanDatasetRow>,
        checks: ProvisionChecks,
        extra: Partial<Pick<ProvisionAnswer, "reason" | "missing_permissions" | "manual_steps">> = {}
      ): ProvisionAnswer => ({
        status,
        reason: extra.reason ?? null,
        ...(extra.missing_permissions === undefined ? {} : { missing_permissions: extra.missing_permissions }),
        ...(extra.manual_steps === undefined ? {} : { manual_steps: extra.manual_steps }),
        clean_dataset_id: Option.match(clean, { onNone: () => null, onSome: (c) => c.dataset_id }),
        destination_id: Option.match(clean, { onNone: () => null, onSome: (c) => c.destination_id }),
        custom_conversions: Option.match(clean, { onNone: () => [], onSome: (c) => c.custom_conversions }),
        checks
      })

      /** The provision state table (target `clean` set on `provisioned` only when `setTarget`). */
      const provisionOnce = Effect.fn("PlatformSafe.provisionOnce")(function*(
        actor: PrincipalShape,
        row: CatalogRow,
        body: ProvisionBody
      ) {
        const existing = yield* repo.cleanDataset(row.profile_id)
        const connection = yield* connectionFor(row.profile_id, existing)
        const tracked = yield* repo.trackedTypes(row.profile_id)
        const covered = Option.match(existing, {
          onNone: () => false,
          onSome: (c) => c.destination_id !== null && tracked.every((t) => c.custom_conversions.some((cc) => cc.outcome_type === t))
        })
        if (covered) return answer("already_provisioned", existing, yield* checksOf(row, connection, row.platform_safe_target))
        if (!connection.scopes.includes(MANAGE_ADS)) {
          return answer("action_required", existing, yield* checksOf(row, connection, row.platform_safe_target), {
            reason: "ads_management_missing",
            missing_permissions: [MANAGE_ADS]
          })
        }
        const session: ProviderSession = yield* onPlatform(sessions.session(connection.id))
        // The dataset id is recorded the moment the platform answers: a retry reuses it.
        let clean: CleanDatasetRow
        if (Option.isSome(existing)) {
          clean = existing.value
        } else {
          const created = yield* onPlatform(platform.createDataset(session, body.dataset_name ?? "Platform-Safe dataset").pipe(
            Effect.map((d): string | null => d.id),
            // The account has no free dataset slot: a person must free one.
            Effect.catchTag("ProviderRefused", (e) => (e.code === "dataset_limit_reached" ? Effect.succeed(null) : Effect.fail(e)))
          ))
          if (created === null) {
            return answer("action_required", existing, yield* checksOf(row, connection, row.platform_safe_target), {
              reason: "pixel_slot_taken",
              manual_steps: [
                "Open the ad account's data sources and remove or unassign a dataset you no longer use.",
                "Call provision again."
              ]
            })
          }
          const saved = yield* repo.saveDataset(row.profile_id, connection.id, created)
          if (Option.isNone(saved)) return yield* Effect.die("the Clean Dataset row vanished after its insert")
          clean = saved.value
        }
        // One neutral custom conversion per tracked outcome type (the neutral name carries no outcome context).
        let conversions: ReadonlyArray<StoredConversion> = clean.custom_conversions
        for (const type of tracked) {
          if (conversions.some((c) => c.outcome_type === type)) continue
          const customEventType = standardEventOf(type)
          const made = yield* onPlatform(platform.createCustomConversion(session, clean.dataset_id, {
            name: `Conversion_${sha256(type).slice(0, 10)}`,
            custom_event_type: customEventType
          }))
          conversions = [...conversions, { outcome_type: type, id: made.id, custom_event_type: customEventType }]
          yield* repo.saveConversions(row.profile_id, conversions)
        }
        let destinationId = clean.destination_id
        if (destinationId === null) {
          const id = crypto.randomUUID()
          const inserted = yield* destinations.insert({
            id,
            profileId: row.profile_id,
            kind: "adplatform_capi",
            connectionId: connection.id,
            datasetId: clean.dataset_id,
            name: body.dataset_name ?? "Platform-Safe Clean Dataset",
            cleanDataset: true
          })
          destinationId = inserted ? id : Option.getOrNull(yield* destinations.conflicting(row.profile_id, "adplatform_capi", clean.dataset_id, null))
          if (destinationId !== null) yield* repo.saveDestination(row.profile_id, destinationId)
        }
        yield* privacy.set(row.profile_id, row.privacy_mode, "clean")
        yield* audit.record({
          actor,
          action: "conversion_sync.platform_safe_provisioned",
          targetKind: "profile",
          targetId: row.profile_id,
          profileId: row.profile_id,
          workspaceId: row.workspace_id,
          details: { dataset_id: clean.dataset_id, destination_id: destinationId, custom_conversions: conversions.length }
        })
        const stored = { ...clean, custom_conversions: conversions, destination_id: destinationId }
        return answer("provisioned", Option.some(stored), yield* checksOf(row, connection, "clean"))
      })

      const provision = Effect.fn("PlatformSafe.provision")(function*(actor: PrincipalShape, profile: ProfileContext, body: ProvisionBody) {
        const row = yield* settings(profile.profileId)
        return yield* provisionOnce(actor, row, body)
      })

      /** Live ad sets not optimizing on the Clean Dataset, each with its Clean Dataset target. */
      const toRecreate = (optimizations: ReadonlyArray<AdSetOptimization>, clean: CleanDatasetRow): ReadonlyArray<AdSetToRecreate> =>
        optimizations
          .filter((o) => o.status === "active" && o.promoted_object.pixel_id !== clean.dataset_id)
          .map((o) => ({
            ad_set_id: o.id,
            name: o.name,
            status: o.status,
            current: o.promoted_object,
            target: { pixel_id: clean.dataset_id, custom_event_type: o.promoted_object.custom_event_type, optimize_on: "standard_event" as const }
          }))

      const target = Effect.fn("PlatformSafe.target")(function*(actor: PrincipalShape, profile: ProfileContext, body: TargetBody) {
        const row = yield* settings(profile.profileId)
        const record = (from: string, to: string) =>
          audit.record({
            actor,
            action: "conversion_sync.platform_safe_target",
            targetKind: "profile",
            targetId: row.profile_id,
            profileId: row.profile_id,
            workspaceId: row.workspace_id,
            details: { from, to }
          })
        if (body.target === "clean") {
          const provisioned = yield* provisionOnce(actor, row, {})
          const clean = yield* repo.cleanDataset(row.profile_id)
          if (provisioned.status === "action_required" || Option.isNone(clean)) {
            return { switched: false, platform_safe_target: row.platform_safe_target, ad_sets_to_recreate: [], provision: provisioned }
          }
          yield* privacy.set(row.profile_id, row.privacy_mode, "clean")
          if (row.platform_safe_target !== "clean") yield* record(row.platform_safe_target, "clean")
          const connection = yield* connectionFor(row.profile_id, clean)
          const session = yield* onPlatform(sessions.session(connection.id))
          const optimizations = yield* onPlatform(platform.adSetOptimizations(session))
          return {
            switched: row.platform_safe_target !== "clean",
            platform_safe_target: "clean" as const,
            ad_sets_to_recreate: toRecreate(optimizations, clean.value),
            provision: provisioned
          }
        }
        if (row.platform_safe_target === "existing") {
          return { switched: false, platform_safe_target: "existing" as const, ad_sets_to_recreate: [], provision: null }
        }
        const clean = yield* repo.cleanDataset(row.profile_id)
        if (Option.isSome(clean) && body.confirm_live_ad_sets !== true) {
          // Unreadable counts as live: leaving the Clean Dataset must not strand delivering ad sets unseen.
          const live = yield* connectionFor(row.profile_id, clean).pipe(
            Effect.flatMap((c) => onPlatform(sessions.session(c.id))),
            Effect.flatMap((session) => onPlatform(platform.adSetOptimizations(session))),
            Effect.map((all) => all.filter((o) => o.status === "active" && o.promoted_object.pixel_id === clean.value.dataset_id).map((o) => o.id)),
            Effect.catchTags({
              RateLimitExceeded: () => Effect.succeed(null),
              AdplatformUnavailable: () => Effect.succeed(null),
              AdplatformConnectionRequired: () => Effect.succeed(null),
              AdplatformWritePermissionMissing: () => Effect.succeed(null)
            })
          )
          if (live === null || live.length > 0) {
            return yield* new CleanDatasetHasLiveAdSets({
              message: live === null
                ? "The ad platform cannot be read to check the Clean Dataset's ad sets; confirm with confirm_live_ad_sets: true."
                : `Ad sets still deliver on the Clean Dataset (${live.join(", ")}); confirm with confirm_live_ad_sets: true.`,
              reason: live === null ? "adplatform_unreadable" : "live_ad_sets"
            })
          }
        }
        yield* privacy.set(row.profile_id, row.privacy_mode, "existing")
        yield* record("clean", "existing")
        return { switched: true, platform_safe_target: "existing" as const, ad_sets_to_recreate: [], provision: null }
      })

      /** One duplicate swap, resumed from its recorded step; each platform id is stored as soon as it exists. */
      const rebuild = Effect.fn("PlatformSafe.rebuild")(function*(
        profileId: string,
        session: ProviderSession,
        original: AdSetOptimization,
        target: PromotedObjectValue,
        mode: "switch" | "run_both"
      ) {
        let state: RebuildRow = yield* repo.startRebuild(profileId, original.id, mode)
        const save = (next: Partial<RebuildRow> & Pick<RebuildRow, "step">) =>
          Effect.tap(repo.advanceRebuild(profileId, original.id, {
            step: next.step,
            ...(next.copy_ad_set_id ? { copy_ad_set_id: next.copy_ad_set_id } : {}),
            ...(next.copied_ad_ids === undefined ? {} : { copied_ad_ids: next.copied_ad_ids }),
            ...(next.pause_refused === undefined ? {} : { pause_refused: next.pause_refused })
          }), () => Effect.sync(() => { state = { ...state, ...next } }))
        if (state.step === "create") {
          const created = yield* onPlatform(platform.createAdSet(session, original.campaign_id, {
            name: `${original.name} · Platform-Safe`,
            promoted_object: target,
            daily_budget_minor: original.daily_budget_minor,
            lifetime_budget_minor: original.lifetime_budget_minor
          }))
          yield* save({ step: "copy_ads", copy_ad_set_id: created.id })
        }
        const copyId = state.copy_ad_set_id ?? ""
        if (state.step === "copy_ads") {
          let done = state.copied_ad_ids
          for (const adId of original.ad_ids) {
            if (done.includes(adId)) continue
            yield* onPlatform(platform.copyAd(session, adId, copyId))
            done = [...done, adId]
            yield* save({ step: "copy_ads", copied_ad_ids: done })
          }
          yield* save({ step: "activate" })
        }
        if (state.step === "activate") {
          yield* onPlatform(platform.setStatus(session, { level: "ad_set", id: copyId, status: "active" }))
          yield* save({ step: mode === "switch" ? "pause_original" : "done" })
        }
        if (state.step === "pause_original") {
          // Paused last, never deleted; a refused pause leaves both spending (warned, not failed).
          const paused = yield* platform.setStatus(session, { level: "ad_set", id: original.id, status: "paused" }).pipe(
            Effect.as(true),
            Effect.catchTag("ProviderRefused", () => Effect.succeed(false)),
            onPlatform
          )
          yield* save({ step: "done", pause_refused: !paused })
        }
        return state
      })

      const repoint = Effect.fn("PlatformSafe.repoint")(function*(actor: PrincipalShape, profile: ProfileContext, body: RepointBody) {
        const row = yield* settings(profile.profileId)
        const byCredential = actor.kind === "api_key" || actor.kind === "user_token"
        if (row.platform_safe_target === "existing" && byCredential) {
          return yield* new InvalidState({
            message: "The Platform-Safe target is existing: switch to the Clean Dataset first (target POST {target: clean}).",
            reason: "switch_to_clean_dataset"
          })
        }
        const cleanRow = yield* repo.cleanDataset(row.profile_id)
        if (Option.isNone(cleanRow)) {
          return yield* new InvalidState({ message: "No Clean Dataset yet: call provision first.", reason: "provision_platform_safe_dataset" })
        }
        const clean = cleanRow.value
        const confirmed = body.confirm_recreate === true
        if (confirmed && byCredential) yield* checkConsent(body.consent, Date.now())
        const connection = yield* connectionFor(row.profile_id, cleanRow)
        return yield* pointAdSets(actor, row, connection, body.ad_set_ids, (o) => ({
          pixel_id: clean.dataset_id,
          custom_event_type: o.promoted_object.custom_event_type
        }), confirmed, body.duplicate_swap_mode ?? "switch", confirmed && byCredential ? body.consent : null)
      })

      /**
       * Points each ad set at `targetOf(it)`: already there, re-pointed in place (a draft),
       * listed as needing a rebuild, or rebuilt by duplicate swap when `confirmed`.
       */
      const pointAdSets = Effect.fn("PlatformSafe.pointAdSets")(function*(
        actor: PrincipalShape,
        row: CatalogRow,
        connection: AdConnection,
        adSetIds: ReadonlyArray<string>,
        targetOf: (o: AdSetOptimization) => PromotedObjectValue,
        confirmed: boolean,
        mode: "switch" | "run_both",
        consent: unknown
      ) {
        if (!connection.scopes.includes(MANAGE_ADS)) {
          return yield* new AdplatformWritePermissionMissing({ message: "The ad-platform connection lacks the manage-advertisements grant.", reconnect_required: true })
        }
        const session = yield* onPlatform(sessions.session(connection.id))
        const optimizations = yield* onPlatform(platform.adSetOptimizations(session))
        const results: Array<RepointOutcome> = []
        for (const id of [...new Set(adSetIds)]) {
          const found = optimizations.find((o) => o.id === id)
          const outcome = (o: RepointOutcome["outcome"], newId: string | null = null, pauseRefused = false) =>
            results.push({ ad_set_id: id, outcome: o, new_ad_set_id: newId, pause_refused: pauseRefused })
          if (found === undefined) {
            outcome("not_found")
            continue
          }
          const goal = targetOf(found)
          if (found.promoted_object.pixel_id === goal.pixel_id && found.promoted_object.custom_event_type === goal.custom_event_type) {
            outcome("already_repointed")
          } else if (!found.published) {
            yield* onPlatform(platform.setPromotedObject(session, id, goal))
            outcome("repointed")
          } else if (!confirmed) {
            outcome("needs_recreate")
          } else {
            const done = yield* rebuild(row.profile_id, session, found, goal, mode)
            outcome(done.mode === "switch" ? "recreated" : "duplicated", done.copy_ad_set_id, done.pause_refused)
          }
        }
        const rebuilt = results.filter((r) => r.outcome === "recreated" || r.outcome === "duplicated").map((r) => r.ad_set_id)
        const ofOutcome = (o: RepointOutcome["outcome"]) => results.filter((r) => r.outcome === o).map((r) => r.ad_set_id)
        const warnings: Array<RebuildWarning> = []
        if (rebuilt.length > 0) {
          warnings.push({ code: "new_ad_set_ids", ad_set_ids: rebuilt }, { code: "learning_reset", ad_set_ids: rebuilt })
          const switched = ofOutcome("recreated")
          if (switched.length > 0) warnings.push({ code: "double_spend_window", ad_set_ids: switched })
          const refused = results.filter((r) => r.pause_refused).map((r) => r.ad_set_id)
          if (refused.length > 0) warnings.push({ code: "double_spend_risk", ad_set_ids: refused })
          const both = ofOutcome("duplicated")
          if (both.length > 0) warnings.push({ code: "budget_doubled", ad_set_ids: both })
          yield* audit.record({
            actor,
            action: "conversion_sync.ad_sets_rebuilt",
            targetKind: "profile",
            targetId: row.profile_id,
            profileId: row.profile_id,
            workspaceId: row.workspace_id,
            details: { mode, ad_set_ids: rebuilt, consent }
          })
        }
        return {
          results,
          needs_recreate: ofOutcome("needs_recreate"),
          recreated: ofOutcome("recreated"),
          duplicated: ofOutcome("duplicated"),
          warnings
        }
      })

      /** `POST /wiring/ad-sets`: the rule's destination dataset and standard event, consent as for repoint. */
      const wireAdSets = Effect.fn("PlatformSafe.wireAdSets")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        body: WireAdSetsBody,
        destination: { readonly dataset_id: string; readonly connection_id: string },
        conversionKey: string
      ) {
        const row = yield* catalog.find(profile.profileId, false)
        if (Option.isNone(row)) return yield* new NotFound({ message: "No such profile." })
        const byCredential = actor.kind === "api_key" || actor.kind === "user_token"
        const confirmed = body.confirm_duplicate_swap === true
        if (confirmed && byCredential) yield* checkConsent(body.consent, Date.now())
        const all = yield* adConnections.of(profile.profileId)
        const connection = all.find((c) => c.id === destination.connection_id && c.status !== "reconnect_required" && c.external_account_id !== null)
        if (connection === undefined) {
          return yield* new AdplatformConnectionRequired({ message: "The rule's destination connection needs a reconnect.", reason: "no_usable_connection" })
        }
        const event = standardEventOf(conversionKey)
        const answer = yield* pointAdSets(
          actor,
          row.value,
          connection,
          body.ad_set_ids,
          () => ({ pixel_id: destination.dataset_id, custom_event_type: event }),
          confirmed,
          body.duplicate_swap_mode ?? "switch",
          confirmed && byCredential ? body.consent : null
        )
        const { needs_recreate, ...rest } = answer
        return { ...rest, needs_duplicate_swap: needs_recreate }
      })

      return { provision, target, repoint, wireAdSets }
    })
  ).pipe(Layer.provide([PlatformSafeRepo.layer, CatalogRepo.layer, PrivacySettings.layer, DestinationsRepo.layer, AdConnections.layer, ConnectionSessions.layer, DpaService.layer, AuditLog.layer]))
}
