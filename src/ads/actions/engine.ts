/**
 * One ad action on one object, in the order that keeps the ledger and the ad platform in step:
 * read the object live, check it against the rules (state table, budget bounds, drift), write a
 * `pending` ledger row, call the platform, settle the row. Only the AdSet and Campaign entities
 * call `execute` (cluster/AdSet.ts, cluster/Campaign.ts), one message at a time per object, so
 * two budget changes on one ad set each read the budget the other left.
 */
import { Context, Effect, Layer, Option, Schema, Stream } from "effect"
import { ActionEntry, AppliedByBasis } from "../../../schema/ad-actions.ts"
import {
  AdplatformConnectionRequired,
  AdplatformUnavailable,
  AdplatformWritePermissionMissing,
  AdsetNotEditable,
  BudgetChangeOutOfBounds,
  CampaignNotEditable,
  CampaignNotPausable,
  CampaignNotResumable,
  DatabaseUnavailable,
  InvalidState,
  NotFound,
  RateLimitExceeded,
  unprocessable,
  ValidationError
} from "../../../schema/errors.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { AdPlatform, type AdStatus } from "../../connections/providers/adplatform/port.ts"
import type { ProviderError, ProviderUnavailable } from "../../connections/providers/errors.ts"
import type { ProviderSession } from "../../connections/providers/oauth/port.ts"
import { AdActionsRepo, type ActionRow, type Level, type NewAction, type Settled } from "./repo.ts"

/** The service's floor for a budget, whatever the currency (api-concepts.md, Limits). */
export const BUDGET_FLOOR_MINOR = 100

/** What an entity is asked to do on one object. */
export const ActionCommand = Schema.Struct({
  profileId: Schema.String,
  connectionId: Schema.String,
  level: Schema.Literals(["ad", "ad_set", "campaign"]),
  objectId: Schema.String,
  op: Schema.Literals(["pause", "resume", "budget", "rollback", "url_tags"]),
  budget: Schema.NullOr(Schema.Struct({ field: Schema.Literals(["daily", "lifetime"]), minor: Schema.Int })),
  /** rollback: the ledger row undone. */
  actionId: Schema.NullOr(Schema.String),
  appliedBy: Schema.NullOr(Schema.String),
  basis: Schema.NullOr(AppliedByBasis),
  /** url_tags: the URL tags to set on the ad's creative. */
  urlTags: Schema.optionalKey(Schema.String)
})
export type ActionCommand = typeof ActionCommand.Type

export const BudgetFacts = Schema.Struct({
  budget_type: Schema.Literals(["daily", "lifetime"]),
  previous_budget_minor: Schema.Int,
  budget_minor: Schema.Int
})

export const ActionOutcome = Schema.Struct({ entry: ActionEntry, budget: Schema.NullOr(BudgetFacts) })
export type ActionOutcome = typeof ActionOutcome.Type

/** Every refusal an action can end in, as the entity's error schema. */
export const ActionError = Schema.Union([
  NotFound,
  InvalidState,
  AdsetNotEditable,
  CampaignNotEditable,
  CampaignNotPausable,
  CampaignNotResumable,
  BudgetChangeOutOfBounds,
  ValidationError,
  RateLimitExceeded,
  AdplatformUnavailable,
  AdplatformWritePermissionMissing,
  AdplatformConnectionRequired,
  DatabaseUnavailable
])
export type ActionError = typeof ActionError.Type

/** A provider failure as the ad actions answer it. */
export const fromProvider = (error: ProviderError): ActionError => {
  switch (error._tag) {
    case "ProviderThrottled":
      return new RateLimitExceeded({
        message: "The ad platform is throttling this account; retry after the delay.",
        reason: "adplatform_throttled",
        retry_after_seconds: Math.max(1, Math.ceil(error.retryAfterSeconds))
      })
    case "ProviderPermissionMissing":
      return new AdplatformWritePermissionMissing({
        message: "The ad-platform connection lacks the manage-advertisements grant. Reconnect it.",
        reconnect_required: true
      })
    case "ProviderAuthRevoked":
      return new AdplatformConnectionRequired({
        message: "The ad-platform connection needs a reconnect before the service can act on ads.",
        reconnect_required: true
      })
    case "ProviderRefused":
      return error.status === 404
        ? new NotFound({ message: "The ad platform does not know this object on the profile's account." })
        : error.code === "budget_below_minimum"
        ? unprocessable(`The ad platform refused the budget: ${error.detail}`, { reason: "adplatform_budget_minimum" })
        : new AdplatformUnavailable({
          message: "The ad platform refused the write.",
          provider: "adplatform",
          provider_status: error.status,
          provider_code: error.code,
          provider_message: error.detail
        })
    case "ProviderUnavailable":
      return new AdplatformUnavailable({
        message: "The ad platform could not be reached. Retry the same request.",
        provider: "adplatform",
        ...(error.status === null ? {} : { provider_status: error.status })
      })
  }
}

/** What a live read can end in once the synced fallback is applied. */
type Unreadable = AdsetNotEditable | ProviderUnavailable

const isProviderError = (error: ProviderError | ActionError): error is ProviderError => error._tag.startsWith("Provider")

interface Live {
  readonly status: AdStatus
  readonly daily: number | null
  readonly lifetime: number | null
  /** Ad sets: the campaign's status and whether the campaign owns the budget. */
  readonly campaignStatus?: AdStatus
  readonly campaignOwnsBudget?: boolean
}

const GONE: ReadonlyArray<AdStatus> = ["archived", "deleted"]

export class AdActionEngine extends Context.Service<AdActionEngine, {
  readonly execute: (command: ActionCommand) => Effect.Effect<ActionOutcome, ActionError>
}>()("svc/AdActionEngine") {
  static readonly layer = Layer.effect(AdActionEngine)(
    Effect.gen(function*() {
      const repo = yield* AdActionsRepo
      const platform = yield* AdPlatform
      const sessions = yield* ConnectionSessions

      const provider = <A>(effect: Effect.Effect<A, ProviderError | ActionError>) =>
        Effect.mapError(effect, (error): ActionError => (isProviderError(error) ? fromProvider(error) : error))

      const readLive = (session: ProviderSession, level: Level, id: string): Effect.Effect<Live, ProviderError> => {
        switch (level) {
          case "ad":
            return Effect.map(platform.getAd(session, id), (ad) => ({ status: ad.status, daily: null, lifetime: null }))
          case "campaign":
            return Effect.map(platform.getCampaign(session, id), (c) => ({
              status: c.status,
              daily: c.daily_budget_minor,
              lifetime: c.lifetime_budget_minor
            }))
          case "ad_set":
            return Effect.flatMap(platform.getAdSet(session, id), (set) =>
              Effect.map(platform.getCampaign(session, set.campaign_id), (c) => ({
                status: set.status,
                daily: set.daily_budget_minor,
                lifetime: set.lifetime_budget_minor,
                campaignStatus: c.status,
                campaignOwnsBudget: c.daily_budget_minor !== null || c.lifetime_budget_minor !== null
              })))
        }
      }

      /** Active ads of the campaign in active ad sets: what its pause stops (and its resume restarts). */
      const deliveringAds = (session: ProviderSession, campaignId: string) =>
        Effect.gen(function*() {
          const sets = yield* Stream.runCollect(
            platform.adSets(session).pipe(Stream.filter((set) => set.campaign_id === campaignId && set.status === "active"))
          )
          const active = new Set(sets.map((set) => set.id))
          const ads = yield* Stream.runCollect(
            platform.ads(session).pipe(Stream.filter((ad) => ad.campaign_id === campaignId && ad.status === "active"))
          )
          return ads.filter((ad) => active.has(ad.ad_set_id)).length
        })

      const undoOf = (action: NewAction, id: string): ActionEntry["undo"] => {
        if (action.action === "pause" && action.level === "campaign") {
          return { method: "POST", path: `/api/v1/campaigns/${encodeURIComponent(action.objectId)}/resume` }
        }
        if (action.action === "pause" && action.level === "ad") {
          return { method: "POST", path: `/api/v1/ads/${encodeURIComponent(action.objectId)}/resume` }
        }
        return action.action === "rollback" ? null : { method: "POST", path: `/api/v1/conversion-sync/actions/${id}/rollback` }
      }

      const entryOf = (action: NewAction, id: string, state: Settled, reasonCode: "state_drifted" | null): ActionEntry => ({
        action_id: id,
        level: action.level,
        object_id: action.objectId,
        action: action.action,
        outcome: state === "applied" ? "applied" : state === "not_reversible" ? "not_reversible" : "no_change",
        status: state === "applied" && action.written.status !== null ? action.written.status : action.pre.status,
        affected_ads_count: action.affectedAdsCount,
        rollback_of: action.rollbackOf,
        reason_code: reasonCode,
        applied_by_basis: action.appliedByBasis,
        pre_state: { status: action.pre.status, daily_budget_minor: action.pre.daily, lifetime_budget_minor: action.pre.lifetime },
        undo: state === "applied" ? undoOf(action, id) : null,
        ...(action.creative === undefined
          ? {}
          : { creative: { previous_creative_id: action.creative.pre, creative_id: state === "applied" ? action.creative.written : null } }),
        created_at: new Date().toISOString()
      })

      /** The same tags whatever their order: every pair of `wanted` is already on the creative. */
      const carries = (current: string | null, wanted: string) => {
        if (current === null) return false
        const have = new Set(current.split("&"))
        return wanted.split("&").every((pair) => have.has(pair))
      }

      /** The wanted pairs, after the creative's own parameters whose keys they do not set (an advertiser's extra tags stay). */
      const mergeTags = (current: string | null, wanted: string) => {
        const keys = new Set(wanted.split("&").map((pair) => pair.split("=")[0]))
        const kept = (current ?? "").split("&").filter((pair) => pair !== "" && !keys.has(pair.split("=")[0]))
        return [...kept, wanted].join("&")
      }

      /**
       * URL tags on one ad (decision 0088): read live, refuse what cannot carry them (gone, not a
       * link ad), `no_change` when the creative already carries them, else a pending row, the new
       * creative at the platform, and the row settled with the creative the platform created.
       */
      const urlTags = (session: ProviderSession, base: Omit<NewAction, "action" | "pre" | "written" | "affectedAdsCount" | "rollbackOf">, tags: string) =>
        Effect.gen(function*() {
          const ad = yield* provider(platform.getAd(session, base.objectId))
          if (GONE.includes(ad.status)) {
            return yield* new InvalidState({ message: `The ad is ${ad.status}: its URL tags cannot change.`, reason: ad.status })
          }
          if (ad.creative.destination_type !== null) {
            return yield* new InvalidState({ message: "The ad does not link to a website: URL tags do not apply.", reason: "not_a_link_ad" })
          }
          const draft: NewAction = {
            ...base,
            action: "url_tags",
            pre: { status: ad.status, daily: null, lifetime: null },
            written: { status: null, daily: null, lifetime: null },
            affectedAdsCount: null,
            rollbackOf: null,
            creative: { pre: ad.creative.id, written: null }
          }
          if (carries(ad.creative.url_tags, tags)) return { entry: yield* settledWithoutWrite(draft, "no_change"), budget: null }
          const id = yield* repo.insert(draft, "pending")
          const exit = yield* Effect.exit(platform.createTaggedCreative(session, base.objectId, mergeTags(ad.creative.url_tags, tags)))
          yield* repo.settle(id, exit._tag === "Success" ? "applied" : "failed", exit._tag === "Success" ? exit.value.id : null)
          const created = yield* provider(exit)
          const entry = entryOf({ ...draft, creative: { pre: created.previous_creative_id ?? ad.creative.id, written: created.id } }, id, "applied", null)
          return { entry, budget: null }
        })

      /** Rollback of a URL-tag change: the previous creative back, only while the ad still carries the written one. */
      const rollbackUrlTags = (session: ProviderSession, base: Omit<NewAction, "action" | "pre" | "written" | "affectedAdsCount" | "rollbackOf">, row: ActionRow) =>
        Effect.gen(function*() {
          const ad = yield* provider(platform.getAd(session, row.object_id))
          if (GONE.includes(ad.status)) {
            return yield* new InvalidState({ message: `The ad is ${ad.status}: its creative cannot change.`, reason: ad.status })
          }
          const previous = row.pre_creative_id
          const draft: NewAction = {
            ...base,
            action: "rollback",
            pre: { status: ad.status, daily: null, lifetime: null },
            written: { status: null, daily: null, lifetime: null },
            affectedAdsCount: null,
            rollbackOf: row.id,
            creative: { pre: ad.creative.id, written: previous }
          }
          if (previous === null || row.written_creative_id === null || ad.creative.id !== row.written_creative_id) {
            return { entry: yield* settledWithoutWrite({ ...draft, creative: { pre: ad.creative.id, written: null } }, "not_reversible"), budget: null }
          }
          return { entry: yield* applied(draft, platform.setCreative(session, row.object_id, previous)), budget: null }
        })

      /** Records an action that writes nothing (already so, or a refused rollback). */
      const settledWithoutWrite = (action: NewAction, state: "no_change" | "not_reversible") =>
        Effect.map(
          repo.insert(action, state, state === "not_reversible" ? "state_drifted" : null),
          (id) => entryOf(action, id, state, state === "not_reversible" ? "state_drifted" : null)
        )

      /** Pending row, provider write, settled row: a crash in between leaves a `pending` row, never an unrecorded write. */
      const applied = (action: NewAction, write: Effect.Effect<void, ProviderError>) =>
        Effect.gen(function*() {
          const id = yield* repo.insert(action, "pending")
          const exit = yield* Effect.exit(write)
          yield* repo.settle(id, exit._tag === "Success" ? "applied" : "failed")
          yield* provider(exit)
          return entryOf(action, id, "applied", null)
        })

      const execute = Effect.fn("AdActionEngine.execute")(function*(command: ActionCommand) {
        const session = yield* provider(sessions.session(command.connectionId))
        const base = {
          profileId: command.profileId,
          connectionId: command.connectionId,
          level: command.level,
          objectId: command.objectId,
          appliedBy: command.appliedBy,
          appliedByBasis: command.basis
        }
        if (command.op === "url_tags") {
          if (command.level !== "ad" || command.urlTags === undefined) {
            return yield* new ValidationError({ message: "URL tags are set on an ad and name the tags." })
          }
          return yield* urlTags(session, base, command.urlTags)
        }
        const readOrFallback = readLive(session, command.level, command.objectId).pipe(
          Effect.catchTag("ProviderUnavailable", (error): Effect.Effect<never, Unreadable | DatabaseUnavailable> =>
            // Status read live, the synced status only as a fallback (state table): a gone ad set is still refused.
            command.op === "budget" && command.level === "ad_set"
              ? Effect.flatMap(repo.synced(command.profileId, "ad_set", command.objectId), (synced): Effect.Effect<never, Unreadable> =>
                Option.isSome(synced) && (synced.value.status === "archived" || synced.value.status === "deleted")
                  ? Effect.fail(new AdsetNotEditable({ message: `The ad set is ${synced.value.status} (last synced status).` }))
                  : Effect.fail(error))
              : Effect.fail(error))
        )
        const live = yield* provider(readOrFallback)
        const preOf = { status: live.status, daily: live.daily, lifetime: live.lifetime }
        const nothing = { status: null, daily: null, lifetime: null }
        /** An action that finds the object already as asked: recorded, nothing written. */
        const noChange = (action: ActionCommand["op"]) =>
          settledWithoutWrite({ ...base, action, pre: preOf, written: nothing, affectedAdsCount: null, rollbackOf: null }, "no_change")

        if (command.op === "pause" || command.op === "resume") {
          const target = command.op === "pause" ? "paused" : "active"
          if (GONE.includes(live.status)) {
            const message = `The ${command.level === "ad" ? "ad" : "campaign"} is ${live.status}: it cannot be ${command.op}d.`
            return yield* command.level === "campaign"
              ? command.op === "pause" ? new CampaignNotPausable({ message }) : new CampaignNotResumable({ message })
              : new InvalidState({ message })
          }
          if (live.status === target) {
            return { entry: yield* noChange(command.op), budget: null }
          }
          const affected = command.level === "campaign" ? yield* provider(deliveringAds(session, command.objectId)) : null
          // A campaign resume after a service pause is that pause's undo.
          const undone = command.op === "resume" && command.level === "campaign"
            ? Option.getOrNull(Option.map(yield* repo.openPause(command.profileId, "campaign", command.objectId), (row) => row.id))
            : null
          const action: NewAction = {
            ...base,
            action: command.op,
            pre: preOf,
            written: { status: target, daily: null, lifetime: null },
            affectedAdsCount: affected,
            rollbackOf: undone
          }
          const write = platform.setStatus(session, { level: command.level, id: command.objectId, status: target })
          const entry = yield* applied(action, write)
          return { entry, budget: null }
        }

        if (command.op === "budget") {
          const change = command.budget
          if (change === null || command.level === "ad") {
            return yield* new ValidationError({ message: "A budget change names its field." })
          }
          if (command.level === "ad_set") {
            const campaignGone = live.campaignStatus !== undefined && GONE.includes(live.campaignStatus)
            const gone = GONE.includes(live.status) ? live.status : campaignGone ? `in a ${live.campaignStatus} campaign` : null
            if (gone !== null) return yield* new AdsetNotEditable({ message: `The ad set is ${gone}: its budget cannot change.` })
            if (live.campaignOwnsBudget === true) {
              return yield* new InvalidState({
                message: "The ad set's campaign owns the budget: change it on the campaign.",
                reason: "campaign_budget"
              })
            }
          } else {
            if (GONE.includes(live.status)) {
              return yield* new CampaignNotEditable({ message: `The campaign is ${live.status}: its budget cannot change.` })
            }
            if (live.daily === null && live.lifetime === null) {
              return yield* new CampaignNotEditable({
                message: "The campaign has no budget of its own: its ad sets hold the budgets.",
                reason: "no_campaign_budget"
              })
            }
          }
          const current = change.field === "daily" ? live.daily : live.lifetime
          if (current === null) {
            return yield* new InvalidState({
              message: change.field === "daily"
                ? "The object runs on a lifetime budget: send new_lifetime_budget_minor."
                : "The object runs on a daily budget: send new_daily_budget_minor.",
              reason: change.field === "daily" ? "lifetime_budget" : "daily_budget"
            })
          }
          if (change.minor < BUDGET_FLOOR_MINOR || 2 * change.minor < current || 2 * change.minor > 3 * current) {
            return yield* new BudgetChangeOutOfBounds({
              message: `The new budget must be within +/-50 % of the live budget ${current} ` +
                `(${Math.ceil(current / 2)} to ${Math.floor(current * 1.5)}) and at least ${BUDGET_FLOOR_MINOR}.`
            })
          }
          const budget = { budget_type: change.field, previous_budget_minor: current, budget_minor: change.minor }
          if (change.minor === current) {
            return { entry: yield* noChange("budget"), budget }
          }
          const action: NewAction = {
            ...base,
            action: "budget",
            pre: preOf,
            written: {
              status: null,
              daily: change.field === "daily" ? change.minor : null,
              lifetime: change.field === "lifetime" ? change.minor : null
            },
            affectedAdsCount: null,
            rollbackOf: null
          }
          const entry = yield* applied(action, platform.setBudget(session, {
            level: command.level,
            id: command.objectId,
            ...(change.field === "daily" ? { daily_budget_minor: change.minor } : { lifetime_budget_minor: change.minor })
          }))
          return { entry, budget }
        }

        // rollback
        const found: Option.Option<ActionRow> = command.actionId === null
          ? Option.none()
          : yield* repo.find(command.profileId, command.actionId)
        if (Option.isNone(found)) return yield* new NotFound({ message: "No ad action with this id on the profile." })
        const row = found.value
        if (row.state !== "applied" || row.action === "rollback") {
          return yield* new InvalidState({
            message: "Only an applied pause, resume, budget or URL-tag change can be rolled back.",
            reason: "not_applied"
          })
        }
        if (row.action === "url_tags") return yield* rollbackUrlTags(session, base, row)
        const drifted = (row.written_status !== null && live.status !== row.written_status) ||
          (row.written_daily_budget_minor !== null && live.daily !== row.written_daily_budget_minor) ||
          (row.written_lifetime_budget_minor !== null && live.lifetime !== row.written_lifetime_budget_minor)
        const rollbackBase = { ...base, action: "rollback" as const, pre: preOf, affectedAdsCount: null, rollbackOf: row.id }
        if (drifted) {
          const entry = yield* settledWithoutWrite({ ...rollbackBase, written: nothing }, "not_reversible")
          return { entry, budget: null }
        }
        const restoreStatus = row.written_status !== null && (row.pre_status === "active" || row.pre_status === "paused")
          ? row.pre_status
          : null
        const restoreDaily = row.written_daily_budget_minor !== null ? row.pre_daily_budget_minor : null
        const restoreLifetime = row.written_lifetime_budget_minor !== null ? row.pre_lifetime_budget_minor : null
        const action: NewAction = {
          ...rollbackBase,
          written: { status: restoreStatus, daily: restoreDaily, lifetime: restoreLifetime }
        }
        const level = command.level
        const write = Effect.gen(function*() {
          if (restoreStatus !== null) yield* platform.setStatus(session, { level, id: command.objectId, status: restoreStatus })
          if ((restoreDaily !== null || restoreLifetime !== null) && level !== "ad") {
            yield* platform.setBudget(session, {
              level,
              id: command.objectId,
              ...(restoreDaily !== null ? { daily_budget_minor: restoreDaily } : {}),
              ...(restoreLifetime !== null ? { lifetime_budget_minor: restoreLifetime } : {})
            })
          }
        })
        const entry = yield* applied(action, write)
        return { entry, budget: null }
      })

      return { execute }
    })
  ).pipe(Layer.provide(AdActionsRepo.layer))
}
