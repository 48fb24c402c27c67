/**
 * The conversion-sync wiring view (api-concepts.md "Conversion-sync objects"; decision 0091):
 * destinations with their routing, and under Platform-Safe the `platform_safe` block (target and
 * suppressed destinations, the Clean Dataset, the event mapping with the 7-day double-count
 * alert, the checklist and not-accepted alert, the DPA, the ad sets to move). A read without
 * `force=1` never calls the ad platform (`ad_sets_to_move` null); `force=1` and the recheck do.
 */
import { Context, Effect, Layer, Option } from "effect"
import {
  AdplatformConnectionRequired,
  type AdplatformUnavailable,
  type AdplatformWritePermissionMissing,
  type ConsentRequired,
  type DatabaseUnavailable,
  type InvalidState,
  NotFound,
  type PlatformSafeRequired,
  type RateLimitExceeded,
  type ValidationError
} from "../../../schema/errors.ts"
import { type AdSetToMove, type WireAdSetsBody, type WiringView } from "../../../schema/platform-safe.ts"
import { AdConnections } from "../../ads/actions/connections.ts"
import type { PrincipalShape, ProfileContext } from "../../kernel/principal.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { DpaService } from "../../accounts/dpa/service.ts"
import { AdPlatform } from "../../connections/providers/adplatform/port.ts"
import { CatalogRepo } from "../catalog/repo.ts"
import { DestinationsRepo } from "../destinations/repo.ts"
import { neutralEventName } from "../pipeline/scrub.ts"
import { fromProvider, PlatformSafe, type WireAdSetsAnswer } from "../platform-safe/service.ts"
import { PlatformSafeRepo } from "../platform-safe/repo.ts"
import { RulesRepo } from "../rules/repo.ts"
import { WiringRepo } from "./repo.ts"

/** The standard events whose silent refusal the not-accepted alert watches. */
const WATCHED_EVENTS = ["Lead", "Schedule", "Purchase"]

type PlatformFailure = RateLimitExceeded | AdplatformWritePermissionMissing | AdplatformConnectionRequired | AdplatformUnavailable

export class ConversionSyncWiring extends Context.Service<ConversionSyncWiring, {
  readonly view: (profile: ProfileContext, live: boolean) => Effect.Effect<WiringView, NotFound | DatabaseUnavailable | PlatformFailure>
  readonly wireAdSets: (
    actor: PrincipalShape,
    profile: ProfileContext,
    body: WireAdSetsBody
  ) => Effect.Effect<WireAdSetsAnswer, NotFound | InvalidState | PlatformSafeRequired | ConsentRequired | ValidationError | DatabaseUnavailable | PlatformFailure>
}>()("svc/ConversionSyncWiring") {
  static readonly layer = Layer.effect(ConversionSyncWiring)(
    Effect.gen(function*() {
      const catalog = yield* CatalogRepo
      const destinations = yield* DestinationsRepo
      const rules = yield* RulesRepo
      const safeRepo = yield* PlatformSafeRepo
      const repo = yield* WiringRepo
      const dpa = yield* DpaService
      const adConnections = yield* AdConnections
      const sessions = yield* ConnectionSessions
      const platform = yield* AdPlatform
      const platformSafe = yield* PlatformSafe

      const view = Effect.fn("ConversionSyncWiring.view")(function*(profile: ProfileContext, live: boolean) {
        const found = yield* catalog.find(profile.profileId, false)
        if (Option.isNone(found)) return yield* new NotFound({ message: "No such profile." })
        const row = found.value
        const all = yield* destinations.live(row.profile_id)
        const safe = row.privacy_mode === "platform_safe"
        const clean = row.platform_safe_target === "clean"
        const inTarget = (d: (typeof all)[number]) => d.status === "active" && (clean ? d.clean_dataset : !d.clean_dataset)
        const routed = all.map((d) => ({
          id: d.id,
          kind: d.kind,
          dataset_id: d.dataset_id,
          clean_dataset: d.clean_dataset,
          status: d.status,
          routing: d.status !== "active" ? "inactive" as const : !safe || inTarget(d) ? "active" as const : "suppressed_platform_safe" as const
        }))
        if (!safe) return { profile_id: row.profile_id, privacy_mode: row.privacy_mode, live: false, destinations: routed, platform_safe: null }

        const dataset = yield* safeRepo.cleanDataset(row.profile_id)
        const targets = all.filter(inTarget)
        const ruleRows = (yield* rules.list(row.profile_id, 500, Option.none())).filter((r) => r.enabled)
        const others = yield* repo.otherSources7d(row.profile_id)
        const eventMapping = ruleRows.flatMap((rule) =>
          targets
            .filter((d) => rule.destination_ids === null || rule.destination_ids.includes(d.id))
            .map((d) => {
              const override = rule.platform_event_name_overrides[d.kind] ?? null
              const n = others.get(d.id) ?? 0
              return {
                rule_id: rule.id,
                conversion_key: rule.conversion_key,
                destination_id: d.id,
                event_name: override === null ? null : neutralEventName(override),
                double_count_risk: n > 0,
                other_sources_7d: n
              }
            })
        )
        const hold = yield* dpa.exportHold(row.profile_id).pipe(Effect.catchTag("NotFound", () => Effect.succeed(Option.some("dpa_not_accepted" as const))))
        const dpaAccepted = Option.isNone(hold)
        const notAccepted = yield* repo.notAccepted7d(row.profile_id, WATCHED_EVENTS)

        let adSetsToMove: ReadonlyArray<typeof AdSetToMove.Type> | null = null
        const cannotAutomate: Array<{ code: string; message: string }> = []
        if (!dpaAccepted) cannotAutomate.push({ code: "sign_dpa", message: "A signed-in owner or admin accepts the DPA; a key or token cannot." })
        if (live && Option.isSome(dataset)) {
          const usable = (yield* adConnections.of(row.profile_id)).find((c) => c.id === dataset.value.connection_id && c.status !== "reconnect_required")
          if (usable === undefined) return yield* new AdplatformConnectionRequired({ message: "The Clean Dataset's ad-platform connection needs a reconnect.", reason: "no_usable_connection" })
          const session = yield* Effect.mapError(sessions.session(usable.id), (e) => (e._tag === "DatabaseUnavailable" ? e : fromProvider(e)))
          const optimizations = yield* Effect.mapError(platform.adSetOptimizations(session), fromProvider)
          const cleanId = dataset.value.dataset_id
          adSetsToMove = optimizations
            .filter((o) => o.status === "active" && (clean ? o.promoted_object.pixel_id !== cleanId : o.promoted_object.pixel_id === cleanId))
            .map((o) => ({ ad_set_id: o.id, name: o.name, current: o.promoted_object, remediation: o.published ? "recreate_ad_set" as const : "wire_optimization" as const }))
          if (!usable.scopes.includes("ads_management") && adSetsToMove.length > 0) {
            cannotAutomate.push({ code: "ads_management_missing", message: "Reconnect the ad account with the manage-ads grant to move ad sets." })
          }
        }
        const provisioned = Option.isSome(dataset) && dataset.value.destination_id !== null
        return {
          profile_id: row.profile_id,
          privacy_mode: row.privacy_mode,
          live,
          destinations: routed,
          platform_safe: {
            target: row.platform_safe_target,
            target_destination_ids: targets.map((d) => d.id),
            suppressed_destination_ids: all.filter((d) => d.status === "active" && !inTarget(d)).map((d) => d.id),
            platform_safe_dataset: {
              status: provisioned ? "provisioned" as const : "missing" as const,
              clean_dataset_id: Option.match(dataset, { onNone: () => null, onSome: (d) => d.dataset_id })
            },
            event_mapping: eventMapping,
            categorization: {
              checklist: [
                { item: "clean_dataset_provisioned", done: provisioned, remediation: provisioned ? null : "provision_platform_safe_dataset" },
                { item: "target_clean", done: clean, remediation: clean ? null : "switch_to_clean_dataset" },
                { item: "dpa_accepted", done: dpaAccepted, remediation: dpaAccepted ? null : "sign_dpa" },
                {
                  item: "optimization_wired",
                  done: adSetsToMove !== null && adSetsToMove.length === 0,
                  remediation: adSetsToMove === null || adSetsToMove.length === 0 ? null : adSetsToMove.some((a) => a.remediation === "recreate_ad_set") ? "recreate_ad_set" : "wire_optimization"
                }
              ],
              events_not_accepted: notAccepted
            },
            dpa_status: { status: dpaAccepted ? "accepted" : "not_accepted", remediation: dpaAccepted ? null : "sign_dpa" as const },
            ad_sets_to_move: adSetsToMove,
            cannot_automate: cannotAutomate
          }
        }
      })

      const wireAdSets = Effect.fn("ConversionSyncWiring.wireAdSets")(function*(actor: PrincipalShape, profile: ProfileContext, body: WireAdSetsBody) {
        const rule = yield* rules.find(profile.profileId, body.rule_id)
        if (Option.isNone(rule)) return yield* new NotFound({ message: "No export rule with this id on the profile." })
        const found = yield* catalog.find(profile.profileId, false)
        if (Option.isNone(found)) return yield* new NotFound({ message: "No such profile." })
        // The rule's ad-platform destination that receives its events now (the Clean Dataset under `clean`).
        const all = yield* destinations.live(profile.profileId)
        const clean = found.value.privacy_mode === "platform_safe" && found.value.platform_safe_target === "clean"
        const destination = all.find((d) =>
          d.status === "active" && d.kind === "adplatform_capi" && (rule.value.destination_ids === null || rule.value.destination_ids.includes(d.id)) &&
          (found.value.privacy_mode !== "platform_safe" || d.clean_dataset === clean))
        if (destination === undefined) {
          return yield* new AdplatformConnectionRequired({ message: "The rule reaches no active ad-platform destination to optimize on.", reason: "no_destination" })
        }
        return yield* platformSafe.wireAdSets(actor, profile, body, destination, rule.value.conversion_key)
      })

      return { view, wireAdSets }
    })
  ).pipe(Layer.provide([
    CatalogRepo.layer,
    DestinationsRepo.layer,
    RulesRepo.layer,
    PlatformSafeRepo.layer,
    WiringRepo.layer,
    DpaService.layer,
    AdConnections.layer,
    ConnectionSessions.layer,
    PlatformSafe.layer
  ]))
}
