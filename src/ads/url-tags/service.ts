/**
 * URL tags on ads (api-endpoints.md, quality ad-ids url-tags; decision 0088): the service's
 * tracking URL parameters set on ads' creatives at the ad platform, through the ad actions (the
 * AdSet entity serialises writes per ad set; one ledger row and one audit row per ad write), an
 * undo that puts an ad back on its previous creative, and whether the profile can apply at all.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { ActionEntry } from "../../../schema/ad-actions.ts"
import {
  type AdplatformConnectionRequired,
  type AdplatformWritePermissionMissing,
  type DatabaseUnavailable,
  NotFound,
  type ServiceUnavailable,
  toEnvelope,
  unprocessable,
  type ValidationError
} from "../../../schema/errors.ts"
import {
  URL_TAGS_MAX_ADS,
  type UrlTagChange,
  type UrlTagsApplied,
  type UrlTagsApply,
  type UrlTagsResult,
  type UrlTagsStatus,
  type UrlTagsUndone
} from "../../../schema/url-tags.ts"
import { heldScopes, type PrincipalShape, type ProfileContext } from "../../kernel/principal.ts"
import type { ActionError } from "../actions/engine.ts"
import { type ActionRow, AdActionsRepo } from "../actions/repo.ts"
import { AdActions } from "../actions/service.ts"

/**
 * The tracking template the service recommends: the platform fills the `{{...}}` macros per
 * click, `utm_id` carries the campaign id (what the web tracker reads as the campaign), and the
 * ad set and ad ids ride in `utm_term` and `utm_content`.
 */
export const TRACKING_URL_TAGS =
  "utm_source={{site_source_name}}&utm_medium=paid_social&utm_campaign={{campaign.name}}&utm_id={{campaign.id}}" +
  "&utm_term={{adset.id}}&utm_content={{ad.id}}"

const RECENT_CHANGES = 20

const SKIPPED_STATES = new Set(["archived", "deleted", "not_a_link_ad"])

type Failure = ActionError | ServiceUnavailable | DatabaseUnavailable

const result = (adId: string, fields: Partial<Omit<UrlTagsResult, "ad_id">> & Pick<UrlTagsResult, "result">): UrlTagsResult => ({
  ad_id: adId,
  reason: null,
  action_id: null,
  previous_creative_id: null,
  creative_id: null,
  error: null,
  ...fields
})

const changeOf = (row: ActionRow): UrlTagChange => ({
  action_id: row.id,
  ad_id: row.object_id,
  action: row.action === "url_tags" ? "url_tags" : "rollback",
  state: row.state,
  previous_creative_id: row.pre_creative_id,
  // Only a settled write put the ad on the written creative.
  creative_id: row.state === "applied" ? row.written_creative_id : null,
  rollback_of: row.rollback_of,
  created_at: row.created_at
})

export class UrlTags extends Context.Service<UrlTags, {
  readonly status: (actor: PrincipalShape, profile: ProfileContext) => Effect.Effect<UrlTagsStatus, DatabaseUnavailable>
  readonly apply: (
    actor: PrincipalShape,
    profile: ProfileContext,
    body: UrlTagsApply
  ) => Effect.Effect<
    UrlTagsApplied,
    ValidationError | AdplatformConnectionRequired | AdplatformWritePermissionMissing | ServiceUnavailable | DatabaseUnavailable
  >
  readonly undo: (actor: PrincipalShape, profile: ProfileContext, adId: string) => Effect.Effect<UrlTagsUndone, Failure>
}>()("svc/UrlTags") {
  static readonly layer = Layer.effect(UrlTags)(
    Effect.gen(function*() {
      const actions = yield* AdActions
      const repo = yield* AdActionsRepo

      type Refusal = UrlTagsStatus["data"]["reason"]

      /** Why the profile cannot apply, first failing check first; null when it can. */
      const refusal = (actor: PrincipalShape, profile: ProfileContext): Effect.Effect<Refusal, DatabaseUnavailable> => {
        if (!profile.attributionEnabled) return Effect.succeed("entitlement_required")
        const scope: Refusal = heldScopes(actor).includes("campaigns:apply") ? null : "scope_missing"
        return Effect.matchEffect(actions.writeGate(profile), {
          onSuccess: () => Effect.succeed(scope),
          onFailure: (error): Effect.Effect<Refusal, DatabaseUnavailable> =>
            error._tag === "AdplatformConnectionRequired"
              ? Effect.succeed("no_connection")
              : error._tag === "AdplatformWritePermissionMissing"
              ? Effect.succeed("write_permission_missing")
              : error._tag === "DatabaseUnavailable"
              ? Effect.fail(error)
              // The gate reads only the store: nothing else can end it.
              : Effect.die(error)
        })
      }

      const status = Effect.fn("UrlTags.status")(function*(actor: PrincipalShape, profile: ProfileContext) {
        const reason = yield* refusal(actor, profile)
        const rows = yield* repo.urlTagChanges(profile.profileId, RECENT_CHANGES)
        return {
          data: {
            can_apply: reason === null,
            reason,
            url_tags: TRACKING_URL_TAGS,
            max_ads_per_call: URL_TAGS_MAX_ADS,
            recent_changes: rows.map(changeOf)
          }
        } satisfies UrlTagsStatus
      })

      /** One ad: its write through the ad actions, the answer folded into a per-ad result. */
      const one = (actor: PrincipalShape, profile: ProfileContext, adId: string): Effect.Effect<UrlTagsResult, DatabaseUnavailable | ServiceUnavailable> =>
        Effect.matchEffect(actions.setUrlTags(actor, profile, adId, TRACKING_URL_TAGS), {
          onSuccess: (entry: ActionEntry) =>
            Effect.succeed(
              entry.outcome === "applied"
                ? result(adId, {
                  result: "applied",
                  action_id: entry.action_id,
                  previous_creative_id: entry.creative?.previous_creative_id ?? null,
                  creative_id: entry.creative?.creative_id ?? null
                })
                : result(adId, {
                  result: "skipped",
                  reason: "already_tagged",
                  action_id: entry.action_id,
                  previous_creative_id: entry.creative?.previous_creative_id ?? null
                })
            ),
          onFailure: (error) => {
            // The store failing is the whole call's failure (503, safe to retry: applied ads then skip as already tagged).
            if (error._tag === "DatabaseUnavailable" || error._tag === "ServiceUnavailable") return Effect.fail(error)
            if (error._tag === "NotFound") return Effect.succeed(result(adId, { result: "skipped", reason: "not_found" }))
            if (error._tag === "InvalidState" && error.reason !== undefined && SKIPPED_STATES.has(error.reason)) {
              const reason = error.reason === "archived" ? "archived" : error.reason === "deleted" ? "deleted" : "not_a_link_ad"
              return Effect.succeed(result(adId, { result: "skipped", reason }))
            }
            const { error: body } = toEnvelope(error)
            return Effect.succeed(result(adId, {
              result: "refused",
              error: {
                code: body.code,
                message: body.message,
                reason: body.reason ?? null,
                provider_status: body.provider_status ?? null,
                provider_code: body.provider_code ?? null,
                provider_message: body.provider_message ?? null
              }
            }))
          }
        })

      const apply = Effect.fn("UrlTags.apply")(function*(actor: PrincipalShape, profile: ProfileContext, body: UrlTagsApply) {
        if (body.acknowledge_learning_reset !== true) {
          return yield* unprocessable(
            "body.acknowledge_learning_reset must be true: each applied ad gets a new creative, which restarts its ad set's learning phase.",
            { reason: "learning_reset_not_acknowledged" }
          )
        }
        const adIds = [...new Set(body.ad_ids)]
        if (adIds.length === 0 || adIds.length > URL_TAGS_MAX_ADS) {
          return yield* unprocessable(`body.ad_ids must name 1 to ${URL_TAGS_MAX_ADS} ads.`, { reason: "ad_ids_count" })
        }
        // Refused as a whole before any ad is read: no usable connection (409), no manage-ads grant (403).
        yield* actions.writeGate(profile)
        // One after the other: each ad's write is already serialised per ad set by the entity.
        const results = yield* Effect.forEach(adIds, (adId) => one(actor, profile, adId))
        const count = (kind: UrlTagsResult["result"]) => results.filter((r) => r.result === kind).length
        return {
          data: {
            url_tags: TRACKING_URL_TAGS,
            results,
            applied_count: count("applied"),
            skipped_count: count("skipped"),
            refused_count: count("refused")
          }
        } satisfies UrlTagsApplied
      })

      const undo = Effect.fn("UrlTags.undo")(function*(actor: PrincipalShape, profile: ProfileContext, adId: string) {
        const open = yield* repo.openUrlTagChange(profile.profileId, adId)
        if (Option.isNone(open)) {
          return yield* new NotFound({ message: `No URL-tag change to undo on ad ${adId}.`, reason: "nothing_to_undo" })
        }
        return { data: yield* actions.rollback(actor, profile, open.value.id) } satisfies UrlTagsUndone
      })

      return { status, apply, undo }
    })
  ).pipe(Layer.provide([AdActions.layer, AdActionsRepo.layer]))
}
