/**
 * Recommendations (decision 0072), generated on read from the profile's last 7 UTC days of spend
 * and last-touch credited conversions, deterministically: the same data proposes the same
 * recommendations under the same ids. Rules:
 *
 * - `adset.budget_increase`: an ad set with at least 3 conversions whose cost per outcome is at
 *   most 70 % of the profile's, spending at least 90 % of its daily budget: +20 %.
 * - `adset.budget_decrease`: an ad set with no conversion that spent at least twice the profile's
 *   cost per outcome: -50 % (the guardrail's edge).
 * - `ad.pause_no_outcomes`: an ad with no conversion that spent at least three times the
 *   profile's cost per outcome: pause.
 */
import { Context, Effect, Layer, Option } from "effect"
import { createHash } from "node:crypto"
import { type DatabaseUnavailable, type InvalidParameter, InvalidState, NotFound, type ServiceUnavailable } from "../../../schema/errors.ts"
import type {
  ApplyRecommendation,
  Recommendation,
  RecommendationApplied,
  RecommendationBody,
  RecommendationPage,
  RecommendationStatus
} from "../../../schema/recommendations.ts"
import type { ActionError } from "../actions/engine.ts"
import { AdActions } from "../actions/service.ts"
import { minorExponent } from "../../kernel/money.ts"
import type { PrincipalShape, ProfileContext } from "../../kernel/principal.ts"
import { DEFAULT_PAGE_SIZE, keysetCursor, toPage } from "../../platform/pagination.ts"
import { type EntityStats, type Proposal, type RecommendationRow, RecommendationsRepo } from "./repo.ts"

export const WINDOW_DAYS = 7
export const INCREASE = { min_outcomes: 3, max_cpo_share_of_profile: 0.7, min_budget_use: 0.9, change: 0.2 }
export const DECREASE = { max_outcomes: 0, min_spend_in_profile_cpo: 2, change: -0.5 }
export const PAUSE = { max_outcomes: 0, min_spend_in_profile_cpo: 3 }

/** A stable id per (profile, rule, target): regenerating the same data never adds a row. */
export const recommendationId = (profileId: string, ruleId: string, level: string, platformId: string) => {
  const hex = createHash("sha256").update(`${profileId}|${ruleId}|${level}|${platformId}`).digest("hex")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

const round = (value: number, digits = 4) => Number(value.toFixed(digits))

/** The proposals the rules make from the window's statistics. */
export const propose = (profileId: string, stats: ReadonlyArray<EntityStats>): ReadonlyArray<Proposal> => {
  const adSets = stats.filter((row) => row.level === "ad_set")
  const spend = adSets.reduce((sum, row) => sum + row.spend, 0)
  const outcomes = adSets.reduce((sum, row) => sum + row.outcomes, 0)
  // Without a conversion in the window there is no cost per outcome to compare against.
  if (outcomes <= 0 || spend <= 0) return []
  const profileCpo = spend / outcomes
  const out: Array<Proposal> = []
  const make = (ruleId: string, row: EntityStats, action: Pick<Proposal, "actionType" | "previousDailyBudgetMinor" | "newDailyBudgetMinor">, thresholds: Record<string, number>, inputs: Record<string, number | string | null>): Proposal => ({
    id: recommendationId(profileId, ruleId, row.level, row.platform_id),
    ruleId,
    level: row.level,
    platformId: row.platform_id,
    ...action,
    rule: { id: ruleId, thresholds, inputs }
  })
  for (const row of stats) {
    const base = { window_days: WINDOW_DAYS, spend: round(row.spend, 2), outcomes: round(row.outcomes), profile_cost_per_outcome: round(profileCpo, 2) }
    if (row.level === "ad_set" && row.daily_budget_minor !== null && row.daily_budget_minor > 0) {
      const budgetMajor = row.daily_budget_minor / 10 ** minorExponent(row.currency ?? "")
      const dailySpend = row.days_with_spend > 0 ? row.spend / row.days_with_spend : 0
      const budgetUse = budgetMajor > 0 ? dailySpend / budgetMajor : 0
      if (row.outcomes >= INCREASE.min_outcomes && row.spend / row.outcomes <= profileCpo * INCREASE.max_cpo_share_of_profile &&
        budgetUse >= INCREASE.min_budget_use) {
        out.push(make("adset.budget_increase", row, {
          actionType: "budget",
          previousDailyBudgetMinor: row.daily_budget_minor,
          newDailyBudgetMinor: Math.round(row.daily_budget_minor * (1 + INCREASE.change))
        }, INCREASE, { ...base, cost_per_outcome: round(row.spend / row.outcomes, 2), budget_use: round(budgetUse), daily_budget_minor: row.daily_budget_minor }))
        continue
      }
      if (row.outcomes <= DECREASE.max_outcomes && row.spend >= profileCpo * DECREASE.min_spend_in_profile_cpo) {
        out.push(make("adset.budget_decrease", row, {
          actionType: "budget",
          previousDailyBudgetMinor: row.daily_budget_minor,
          newDailyBudgetMinor: Math.ceil(row.daily_budget_minor * (1 + DECREASE.change))
        }, DECREASE, { ...base, daily_budget_minor: row.daily_budget_minor }))
      }
    }
    if (row.level === "ad" && row.outcomes <= PAUSE.max_outcomes && row.spend >= profileCpo * PAUSE.min_spend_in_profile_cpo) {
      out.push(make("ad.pause_no_outcomes", row, { actionType: "pause", previousDailyBudgetMinor: null, newDailyBudgetMinor: null }, PAUSE, base))
    }
  }
  return out
}

const render = (row: RecommendationRow): Recommendation => ({
  id: row.id,
  status: row.status,
  rule: row.rule,
  target: { level: row.target_level, platform_id: row.target_platform_id, name: row.target_name },
  action: { type: row.action_type, previous_daily_budget_minor: row.previous_daily_budget_minor, new_daily_budget_minor: row.new_daily_budget_minor },
  action_id: row.action_id,
  created_at: row.created_at,
  updated_at: row.updated_at,
  dismissed_at: row.dismissed_at
})

const utcDay = (now: number, days: number) => new Date(now + days * 86_400_000).toISOString().slice(0, 10)

const notFound = (id: string) => new NotFound({ message: `No recommendation ${id} in this profile.`, reason: "recommendation_not_found" })

export class Recommendations extends Context.Service<Recommendations, {
  readonly list: (
    profile: ProfileContext,
    query: { readonly limit?: number; readonly cursor?: string; readonly status?: RecommendationStatus }
  ) => Effect.Effect<RecommendationPage, InvalidParameter | DatabaseUnavailable>
  readonly dismiss: (profile: ProfileContext, id: string) => Effect.Effect<RecommendationBody, NotFound | InvalidState | DatabaseUnavailable>
  /**
   * Applies an open recommendation's action through the ad actions (same guardrails, ledger and
   * audit; decision 0087) and marks it applied with the ledger entry's id.
   */
  readonly apply: (
    actor: PrincipalShape,
    profile: ProfileContext,
    id: string,
    body: ApplyRecommendation
  ) => Effect.Effect<RecommendationApplied, ActionError | ServiceUnavailable | DatabaseUnavailable>
}>()("svc/Recommendations") {
  static readonly layer = Layer.effect(Recommendations)(
    Effect.gen(function*() {
      const repo = yield* RecommendationsRepo
      const actions = yield* AdActions

      const generate = Effect.fn("Recommendations.generate")(function*(profileId: string) {
        const now = Date.now()
        const stats = yield* repo.stats(profileId, utcDay(now, -(WINDOW_DAYS - 1)), utcDay(now, 0))
        yield* repo.record(profileId, propose(profileId, stats))
      })

      const list = Effect.fn("Recommendations.list")(function*(
        profile: ProfileContext,
        query: { readonly limit?: number; readonly cursor?: string; readonly status?: RecommendationStatus }
      ) {
        // The connect-broker tier has no spend or attribution: nothing to recommend, never a 403.
        if (!profile.attributionEnabled) return { data: [], pagination: { has_next: false, cursor: null } } satisfies RecommendationPage
        const after = yield* keysetCursor(query.cursor)
        // Generated with the first page only: a later page reads what that generation wrote.
        if (Option.isNone(after)) yield* generate(profile.profileId)
        const limit = query.limit ?? DEFAULT_PAGE_SIZE
        const rows = yield* repo.list(profile.profileId, query.status ?? null, after, limit)
        return toPage(rows, limit, render) satisfies RecommendationPage
      })

      const dismiss = Effect.fn("Recommendations.dismiss")(function*(profile: ProfileContext, id: string) {
        const dismissed = yield* repo.dismiss(profile.profileId, id)
        if (Option.isSome(dismissed)) return { data: render(dismissed.value) } satisfies RecommendationBody
        const current = yield* repo.find(profile.profileId, id)
        if (Option.isNone(current)) return yield* notFound(id)
        // Dismissing twice is the same dismissal.
        if (current.value.status === "dismissed") return { data: render(current.value) } satisfies RecommendationBody
        return yield* new InvalidState({
          message: `The recommendation is ${current.value.status}; only an open one can be dismissed.`,
          reason: `recommendation_${current.value.status}`
        })
      })

      const notOpen = (row: RecommendationRow) =>
        new InvalidState({
          message: `The recommendation is ${row.status}; only an open one can be applied.`,
          reason: `recommendation_${row.status}`
        })

      const apply = Effect.fn("Recommendations.apply")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        id: string,
        body: ApplyRecommendation
      ) {
        const found = yield* repo.find(profile.profileId, id)
        if (Option.isNone(found)) return yield* notFound(id)
        const row = found.value
        if (row.status !== "open") return yield* notOpen(row)
        const settled = yield* actions.personOnRecord(actor, profile, body.applied_by)
        // The spec names two bases here: a person acting for themselves is on record as `applied_by`.
        const person = { appliedBy: settled.appliedBy, basis: settled.basis === "person" ? "applied_by" as const : settled.basis }
        const entry = row.action_type === "budget" && row.target_level !== "ad" && row.new_daily_budget_minor !== null
          ? yield* actions.changeBudget(actor, profile, {
            level: row.target_level,
            id: row.target_platform_id,
            field: "daily",
            minor: row.new_daily_budget_minor
          }, person)
          : row.action_type === "pause" && row.target_level !== "ad_set"
          ? yield* actions.setStatus(actor, profile, { level: row.target_level, id: row.target_platform_id, op: "pause" }, person)
          : yield* new InvalidState({ message: "The recommendation's action cannot be applied.", reason: "recommendation_unappliable" })
        // Another apply or a dismissal may have won meanwhile; the action itself is absolute (a
        // budget value, a pause), so a second run of it was a no_change.
        const marked = yield* repo.markApplied(profile.profileId, id, entry.action_id)
        if (Option.isNone(marked)) {
          const now = yield* repo.find(profile.profileId, id)
          return yield* Option.isSome(now) ? notOpen(now.value) : notFound(id)
        }
        const { action_id, level, object_id, action, outcome, status, affected_ads_count, rollback_of, reason_code, applied_by_basis, pre_state, undo, created_at } = entry
        return {
          data: {
            recommendation: render(marked.value),
            action: { action_id, level, object_id, action, outcome, status, affected_ads_count, rollback_of, reason_code, applied_by_basis, pre_state, undo, created_at }
          }
        } satisfies RecommendationApplied
      })

      return { list, dismiss, apply }
    })
  ).pipe(Layer.provide(RecommendationsRepo.layer))
}
