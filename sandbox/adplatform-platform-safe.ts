/**
 * The ad platform's dataset and ad-set optimization surface (issue 20 part 4, decision 0089),
 * kept apart from adplatform.ts: custom conversions on a dataset, each ad set's promoted object
 * (dataset and event it optimizes on), creating an ad set and copying an ad into it. Like the
 * real platform, a published ad set (one that was ever switched on, or any seeded one) has its
 * dataset, event and optimization frozen: a change is refused with `adset_field_frozen`.
 * Every status change of an ad set or ad is logged in order (`_state.platform_safe.ad_set_log`)
 * so that a test observes a duplicate swap's sequence.
 */
import type { AdCreative, AdStatus } from "../src/connections/providers/adplatform/port.ts"
import { type ApiContext, bodyFields, invalid, isSandboxReply, notFound, ok, refuse, type SandboxReply, type SandboxRoute } from "./kind.ts"

export interface PromotedObject {
  readonly pixel_id: string
  readonly custom_event_type: string
}

interface AdSetLike {
  readonly id: string
  readonly account_id: string
  readonly campaign_id: string
  name: string
  status: AdStatus
  learning_stage_status: "LEARNING" | "SUCCESS" | "FAIL" | null
  daily_budget_minor: number | null
  lifetime_budget_minor: number | null
  readonly ads: Array<AdLike>
}

interface AdLike {
  readonly id: string
  readonly account_id: string
  readonly campaign_id: string
  readonly ad_set_id: string
  name: string
  status: AdStatus
  creative: AdCreative
}

interface WorldLike {
  readonly accounts: ReadonlyArray<{
    readonly id: string
    readonly campaigns: ReadonlyArray<{ readonly id: string; readonly ad_sets: Array<AdSetLike> }>
    readonly ads: Array<AdLike>
    readonly datasets: ReadonlyArray<{ readonly id: string; readonly name: string }>
  }>
  readonly adSets: Map<string, AdSetLike>
  readonly ads: Map<string, AdLike>
  readonly datasets: Map<string, string>
}

export interface LogEntry {
  readonly seq: number
  readonly object: "ad_set" | "ad"
  readonly id: string
  readonly action: "created" | "status" | "promoted_object" | "ad_copied"
  readonly status?: string
  readonly from_ad_id?: string
  readonly ad_set_id?: string
}

interface Extra {
  readonly promoted: WeakMap<AdSetLike, PromotedObject>
  /** Ad sets created through the API that were never switched on (not yet published). */
  readonly drafts: WeakSet<AdSetLike>
  readonly customConversions: Array<{ readonly id: string; readonly dataset_id: string; readonly name: string; readonly custom_event_type: string }>
  readonly log: Array<LogEntry>
  next: number
}

const extras = new WeakMap<object, Extra>()

const extraOf = (world: object): Extra => {
  let found = extras.get(world)
  if (found === undefined) {
    found = { promoted: new WeakMap(), drafts: new WeakSet(), customConversions: [], log: [], next: 1 }
    extras.set(world, found)
  }
  return found
}

/** Datasets an ad account holds at most; one more is refused with `dataset_limit_reached`. */
export const MAX_DATASETS_PER_ACCOUNT = 40

export const datasetLimitReached = () =>
  refuse(400, "dataset_limit_reached", `an ad account holds at most ${MAX_DATASETS_PER_ACCOUNT} datasets: remove one first`)

/** Standard events an ad set can optimize on (the real platform's `custom_event_type` values). */
export const STANDARD_EVENTS = ["LEAD", "PURCHASE", "COMPLETE_REGISTRATION", "CONTACT", "SCHEDULE", "SUBMIT_APPLICATION", "OTHER"] as const

/** A seeded ad set optimizes on its account's first dataset (chat ad sets on LEAD, others on PURCHASE). */
const promotedOf = (world: WorldLike, adSet: AdSetLike): PromotedObject => {
  const extra = extraOf(world)
  const set = extra.promoted.get(adSet)
  if (set !== undefined) return set
  const chat = adSet.ads.some((ad) => ad.creative.destination_type !== null)
  return { pixel_id: `ds_${adSet.account_id.slice(4)}_1`, custom_event_type: chat ? "LEAD" : "PURCHASE" }
}

const published = (world: WorldLike, adSet: AdSetLike) => !extraOf(world).drafts.has(adSet)

/** Called after every accepted write to an ad set or ad: logs status changes, publishes an ad set switched on. */
export const noteWrite = (world: WorldLike, id: string, fields: Readonly<Record<string, unknown>>) => {
  const extra = extraOf(world)
  const adSet = world.adSets.get(id)
  const ad = adSet === undefined ? world.ads.get(id) : undefined
  if ((adSet === undefined && ad === undefined) || fields["status"] === undefined) return
  const status = adSet?.status ?? ad?.status
  if (adSet !== undefined && status === "active") extra.drafts.delete(adSet)
  extra.log.push({ seq: extra.next++, object: adSet === undefined ? "ad" : "ad_set", id, action: "status", ...(status === undefined ? {} : { status }) })
}

const optimizationWire = (world: WorldLike, adSet: AdSetLike) => ({
  id: adSet.id,
  campaign_id: adSet.campaign_id,
  name: adSet.name,
  status: adSet.status,
  published: published(world, adSet),
  promoted_object: promotedOf(world, adSet),
  optimization_goal: "OFFSITE_CONVERSIONS",
  daily_budget_minor: adSet.daily_budget_minor,
  lifetime_budget_minor: adSet.lifetime_budget_minor,
  ad_ids: adSet.ads.map((ad) => ad.id)
})

/** A promoted object on a dataset of the account, with a standard event; or the refusal. */
const promotedFrom = (world: WorldLike, accountId: string, value: unknown): PromotedObject | SandboxReply => {
  const fields = bodyFields(value)
  const pixelId = fields["pixel_id"]
  const event = fields["custom_event_type"]
  if (typeof pixelId !== "string" || world.datasets.get(pixelId) !== accountId) return invalid("promoted_object.pixel_id must be a dataset of the ad set's account")
  if (typeof event !== "string" || !STANDARD_EVENTS.some((e) => e === event)) return invalid(`promoted_object.custom_event_type must be one of ${STANDARD_EVENTS.join(", ")}`)
  return { pixel_id: pixelId, custom_event_type: event }
}

type Ctx = ApiContext

type Route = SandboxRoute<WorldLike>

const accountOf = (world: WorldLike, ctx: Ctx) => {
  const id = ctx.params["account"] ?? ""
  const account = world.accounts.find((candidate) => candidate.id === id)
  return account === undefined || !ctx.reaches(id) ? undefined : account
}

const adSetOf = (world: WorldLike, ctx: Ctx) => {
  const found = world.adSets.get(ctx.params["id"] ?? "")
  return found === undefined || !ctx.reaches(found.account_id) ? undefined : found
}

export const platformSafeRoutes: ReadonlyArray<Route> = [
  {
    // Each ad set's optimization (the real platform returns these as ad set fields).
    method: "GET",
    path: "/v1/accounts/:account/adset_optimizations",
    handler: (world, ctx) => {
      const account = accountOf(world, ctx)
      if (account === undefined) return notFound(`ad account ${ctx.params["account"]}`)
      return ok({ data: account.campaigns.flatMap((c) => c.ad_sets.map((s) => optimizationWire(world, s))) })
    }
  },
  {
    method: "POST",
    path: "/v1/datasets/:id/customconversions",
    handler: (world, ctx) => {
      const datasetId = ctx.params["id"] ?? ""
      const accountId = world.datasets.get(datasetId)
      if (accountId === undefined || !ctx.reaches(accountId)) return notFound(`dataset ${datasetId}`)
      const missing = ctx.requireWrite()
      if (missing !== undefined) return missing
      const fields = bodyFields(ctx.body)
      const name = fields["name"]
      const event = fields["custom_event_type"]
      if (typeof name !== "string" || name.length === 0 || name.length > 100) return invalid("name must be 1 to 100 characters")
      if (typeof event !== "string" || !STANDARD_EVENTS.some((e) => e === event)) return invalid(`custom_event_type must be one of ${STANDARD_EVENTS.join(", ")}`)
      const extra = extraOf(world)
      const conversion = { id: `cc_${extra.customConversions.length + 1}_${datasetId}`, dataset_id: datasetId, name, custom_event_type: event }
      extra.customConversions.push(conversion)
      ctx.countWrite()
      return ok(conversion, 201)
    }
  },
  {
    // A new ad set in a campaign: always created paused (a draft until first switched on).
    method: "POST",
    path: "/v1/campaigns/:id/adsets",
    handler: (world, ctx) => {
      const account = world.accounts.find((a) => a.campaigns.some((c) => c.id === ctx.params["id"]))
      const campaign = account?.campaigns.find((c) => c.id === ctx.params["id"])
      if (account === undefined || campaign === undefined || !ctx.reaches(account.id)) return notFound(`campaign ${ctx.params["id"]}`)
      const missing = ctx.requireWrite()
      if (missing !== undefined) return missing
      const fields = bodyFields(ctx.body)
      const name = fields["name"]
      if (typeof name !== "string" || name.length === 0 || name.length > 400) return invalid("name must be 1 to 400 characters")
      if (fields["status"] !== undefined && fields["status"] !== "paused" && fields["status"] !== "PAUSED") {
        return invalid("a new ad set is created paused")
      }
      const promoted = promotedFrom(world, account.id, fields["promoted_object"])
      if (isSandboxReply(promoted)) return promoted
      const budget = (key: string) => {
        const value = fields[key]
        return typeof value === "number" && Number.isInteger(value) && value > 0 ? value : null
      }
      const extra = extraOf(world)
      const adSet: AdSetLike = {
        id: `as_${account.id.slice(4)}_n${extra.next}`,
        account_id: account.id,
        campaign_id: campaign.id,
        name,
        status: "paused",
        learning_stage_status: "LEARNING",
        daily_budget_minor: budget("daily_budget_minor"),
        lifetime_budget_minor: budget("lifetime_budget_minor"),
        ads: []
      }
      campaign.ad_sets.push(adSet)
      world.adSets.set(adSet.id, adSet)
      extra.promoted.set(adSet, promoted)
      extra.drafts.add(adSet)
      extra.log.push({ seq: extra.next++, object: "ad_set", id: adSet.id, action: "created", status: "paused" })
      ctx.countWrite()
      return ok(optimizationWire(world, adSet), 201)
    }
  },
  {
    // The dataset, event and optimization of an ad set: refused once it is published.
    method: "POST",
    path: "/v1/adsets/:id/promoted_object",
    handler: (world, ctx) => {
      const adSet = adSetOf(world, ctx)
      if (adSet === undefined) return notFound(`ad set ${ctx.params["id"]}`)
      const missing = ctx.requireWrite()
      if (missing !== undefined) return missing
      if (published(world, adSet)) {
        return refuse(400, "adset_field_frozen", "promoted_object and optimization_goal cannot change on a published ad set: create a new ad set")
      }
      const promoted = promotedFrom(world, adSet.account_id, ctx.body)
      if (isSandboxReply(promoted)) return promoted
      const extra = extraOf(world)
      extra.promoted.set(adSet, promoted)
      extra.log.push({ seq: extra.next++, object: "ad_set", id: adSet.id, action: "promoted_object" })
      ctx.countWrite()
      return ok({ success: true })
    }
  },
  {
    // Copies an ad (its creative) into another ad set of the same account; the copy is paused.
    method: "POST",
    path: "/v1/ads/:id/copies",
    handler: (world, ctx) => {
      const ad = world.ads.get(ctx.params["id"] ?? "")
      if (ad === undefined || !ctx.reaches(ad.account_id)) return notFound(`ad ${ctx.params["id"]}`)
      const missing = ctx.requireWrite()
      if (missing !== undefined) return missing
      const targetId = bodyFields(ctx.body)["adset_id"]
      const target = typeof targetId === "string" ? world.adSets.get(targetId) : undefined
      if (target === undefined || target.account_id !== ad.account_id) return invalid("adset_id must be an ad set of the ad's account")
      const account = world.accounts.find((a) => a.id === ad.account_id)
      const extra = extraOf(world)
      const copy: AdLike = {
        id: `ad_${ad.account_id.slice(4)}_n${extra.next}`,
        account_id: ad.account_id,
        campaign_id: target.campaign_id,
        ad_set_id: target.id,
        name: ad.name,
        status: "active",
        creative: { ...ad.creative }
      }
      target.ads.push(copy)
      account?.ads.push(copy)
      world.ads.set(copy.id, copy)
      extra.log.push({ seq: extra.next++, object: "ad", id: copy.id, action: "ad_copied", from_ad_id: ad.id, ad_set_id: target.id })
      ctx.countWrite()
      return ok({ copied_ad_id: copy.id }, 201)
    }
  }
]

/** `_state.platform_safe`: custom conversions and the ordered log of ad-set and ad writes. */
export const platformSafeState = (world: WorldLike) => {
  const extra = extraOf(world)
  return {
    custom_conversions: extra.customConversions,
    ad_set_log: extra.log,
    ad_set_optimizations: world.accounts.flatMap((a) => a.campaigns.flatMap((c) => c.ad_sets.map((s) => optimizationWire(world, s))))
  }
}
