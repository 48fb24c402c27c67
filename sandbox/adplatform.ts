/**
 * The simulated ad platform (docs/sandbox-providers.md, "The ad platform"): ad accounts with
 * campaigns, ad sets, ads and creatives (click-to-chat ads with greetings), pixels, datasets
 * and a conversions endpoint that records what it receives, lead forms, and daily insights
 * computed from (ad id, date), never stored, so any range of any size costs nothing to hold.
 * Statuses are lower-case (`active`, `paused`, `archived`, `deleted`); budgets and spend are
 * integer minor units of the account's currency.
 */
import type { AdCreative, AdStatus } from "../src/connections/providers/adplatform/port.ts"
import {
  type ApiContext,
  bodyFields,
  defineSandbox,
  hashOf,
  invalid,
  notFound,
  ok,
  paged,
  refuse,
  type SandboxReply,
  type SandboxRoute
} from "./kind.ts"
import { audienceRoutes, audiencesState } from "./adplatform-audiences.ts"
import { datasetLimitReached, MAX_DATASETS_PER_ACCOUNT, noteWrite, platformSafeRoutes, platformSafeState } from "./adplatform-platform-safe.ts"

interface AdRecord {
  readonly id: string
  readonly account_id: string
  readonly campaign_id: string
  readonly ad_set_id: string
  name: string
  status: AdStatus
  creative: AdCreative
  /** Every creative the ad has carried, by id (URL-tag changes create new ones; the ad may go back to any of them). */
  readonly creatives: Map<string, AdCreative>
  /** Test control: while true the platform refuses creative changes (an ad under review). */
  creative_in_review: boolean
}

interface AdSetRecord {
  readonly id: string
  readonly account_id: string
  readonly campaign_id: string
  name: string
  status: AdStatus
  learning_stage_status: "LEARNING" | "SUCCESS" | "FAIL" | null
  daily_budget_minor: number | null
  lifetime_budget_minor: number | null
  readonly ads: Array<AdRecord>
}

interface CampaignRecord {
  readonly id: string
  readonly account_id: string
  name: string
  status: AdStatus
  objective: string | null
  daily_budget_minor: number | null
  lifetime_budget_minor: number | null
  readonly ad_sets: Array<AdSetRecord>
}

interface AccountRecord {
  readonly id: string
  readonly name: string
  readonly currency: string
  readonly timezone: string
  readonly campaigns: Array<CampaignRecord>
  /** Every ad of the account in order (the lists and insights page over it). */
  readonly ads: Array<AdRecord>
  readonly pixels: Array<{ readonly id: string; readonly name: string }>
  readonly datasets: Array<{ readonly id: string; readonly name: string }>
}

interface Lead {
  readonly leadgen_id: string
  readonly form_id: string
  readonly ad_id: string
  readonly adgroup_id: string
  readonly campaign_id: string
  readonly page_id: string
  readonly created_time: string
  readonly field_data: ReadonlyArray<{ readonly name: string; readonly values: ReadonlyArray<string> }>
}

interface World {
  readonly accounts: Array<AccountRecord>
  readonly campaigns: Map<string, CampaignRecord>
  readonly adSets: Map<string, AdSetRecord>
  readonly ads: Map<string, AdRecord>
  readonly datasets: Map<string, string>
  readonly receivedEvents: Array<Record<string, unknown>>
  readonly leads: Map<string, Lead>
  nextLead: number
  nextDataset: number
  nextCreative: number
}

/** Ads deliver from this day on (insights before it are empty). */
export const DELIVERY_START = "2024-01-01"
/** At most this many days per insights call, as the real platform caps a range (37 months). */
const MAX_RANGE_DAYS = 1_130
const KEPT_EVENTS = 1_000

const websiteCreative = (adId: string): AdCreative => ({
  id: `cr_${adId}_1`,
  url_tags: null,
  thumbnail_url: `https://sandbox.invalid/thumbs/${adId}.png`,
  destination_type: null,
  destination_phone_number: null,
  destination_page_id: null,
  call_to_action_type: "SHOP_NOW",
  greeting: null,
  greeting_status: null,
  welcome_message: null
})

const chatCreative = (adId: string, accountNumber: string): AdCreative => ({
  id: `cr_${adId}_1`,
  url_tags: null,
  thumbnail_url: `https://sandbox.invalid/thumbs/${adId}.png`,
  destination_type: "chat_app_a",
  destination_phone_number: `+1555000${accountNumber.slice(-4)}`,
  destination_page_id: `page_${accountNumber}`,
  call_to_action_type: "WHATSAPP_MESSAGE",
  greeting: "Hi! How can we help you today?",
  greeting_status: "active",
  welcome_message: {
    greeting: "Hi! How can we help you today?",
    prefilled_text: "I'd like to know more",
    ice_breakers: [{ title: "Prices", response: "Our prices start at 49." }, { title: "Opening hours", response: "9 to 5, Monday to Friday." }]
  }
})

const LEARNING: ReadonlyArray<AdSetRecord["learning_stage_status"]> = ["LEARNING", "SUCCESS", "FAIL", "SUCCESS"]

interface CampaignPlan {
  readonly name: string
  readonly objective: string
  readonly chat: boolean
  readonly campaignBudget: number | null
  readonly adSets: number
  readonly adsPerSet: number
  /** At most this many ads in the campaign (the last ad set is then smaller). */
  readonly maxAds?: number
}

/** Builds an account's tree deterministically from its number and plan; registers every object in the world's indexes. */
const buildAccount = (
  world: World,
  spec: { readonly number: string; readonly name: string; readonly currency: string; readonly timezone: string },
  plans: ReadonlyArray<CampaignPlan>
): AccountRecord => {
  const accountId = `act_${spec.number}`
  const account: AccountRecord = {
    id: accountId,
    name: spec.name,
    currency: spec.currency,
    timezone: spec.timezone,
    campaigns: [],
    ads: [],
    pixels: [{ id: `px_${spec.number}`, name: `${spec.name} pixel` }],
    datasets: [{ id: `ds_${spec.number}_1`, name: `${spec.name} dataset` }]
  }
  // On the real platform a pixel id is a dataset id: the conversions endpoint (and custom
  // conversions, promoted objects) take either, so the pixel joins the same index.
  world.datasets.set(`ds_${spec.number}_1`, accountId)
  world.datasets.set(`px_${spec.number}`, accountId)
  plans.forEach((plan, c) => {
    const campaignId = `cmp_${spec.number}_${c + 1}`
    const campaign: CampaignRecord = {
      id: campaignId,
      account_id: accountId,
      name: plan.name,
      status: "active",
      objective: plan.objective,
      daily_budget_minor: plan.campaignBudget,
      lifetime_budget_minor: null,
      ad_sets: []
    }
    for (let s = 0; s < plan.adSets; s++) {
      const adSetId = `as_${spec.number}_${c + 1}_${s + 1}`
      const adSet: AdSetRecord = {
        id: adSetId,
        account_id: accountId,
        campaign_id: campaignId,
        name: `${plan.name} · set ${s + 1}`,
        status: "active",
        learning_stage_status: LEARNING[hashOf(adSetId) % LEARNING.length] ?? null,
        daily_budget_minor: plan.campaignBudget === null && s % 2 === 0 ? 2_000 + (hashOf(adSetId) % 8) * 500 : null,
        lifetime_budget_minor: plan.campaignBudget === null && s % 2 === 1 ? 100_000 : null,
        ads: []
      }
      for (let a = 0; a < plan.adsPerSet && (plan.maxAds === undefined || s * plan.adsPerSet + a < plan.maxAds); a++) {
        const adId = `ad_${spec.number}_${c + 1}_${s + 1}_${a + 1}`
        const ad: AdRecord = {
          id: adId,
          account_id: accountId,
          campaign_id: campaignId,
          ad_set_id: adSetId,
          name: `${plan.name} · ad ${s + 1}.${a + 1}`,
          status: "active",
          creative: plan.chat ? chatCreative(adId, spec.number) : websiteCreative(adId),
          creatives: new Map(),
          creative_in_review: false
        }
        ad.creatives.set(ad.creative.id ?? adId, ad.creative)
        adSet.ads.push(ad)
        account.ads.push(ad)
        world.ads.set(adId, ad)
      }
      campaign.ad_sets.push(adSet)
      world.adSets.set(adSetId, adSet)
    }
    account.campaigns.push(campaign)
    world.campaigns.set(campaignId, campaign)
  })
  return account
}

const seed = (): World => {
  const world: World = {
    accounts: [],
    campaigns: new Map(),
    adSets: new Map(),
    ads: new Map(),
    datasets: new Map(),
    receivedEvents: [],
    leads: new Map(),
    nextLead: 1,
    nextDataset: 2,
    nextCreative: 2
  }
  world.accounts.push(
    buildAccount(world, { number: "1001", name: "Sandbox Ads USD", currency: "USD", timezone: "America/New_York" }, [
      { name: "Spring Sale", objective: "OUTCOME_SALES", chat: false, campaignBudget: 5_000, adSets: 2, adsPerSet: 2 },
      { name: "Chat Leads", objective: "OUTCOME_ENGAGEMENT", chat: true, campaignBudget: null, adSets: 2, adsPerSet: 2 },
      { name: "Lead Forms", objective: "OUTCOME_LEADS", chat: false, campaignBudget: null, adSets: 1, adsPerSet: 2 }
    ]),
    buildAccount(world, { number: "1002", name: "Sandbox Ads EUR", currency: "EUR", timezone: "Europe/Berlin" }, [
      { name: "Winter Boots", objective: "OUTCOME_SALES", chat: false, campaignBudget: null, adSets: 1, adsPerSet: 2 },
      { name: "Chat Berlin", objective: "OUTCOME_ENGAGEMENT", chat: true, campaignBudget: 3_000, adSets: 1, adsPerSet: 1 }
    ])
  )
  return world
}

// --- Insights ---------------------------------------------------------------------------------

const DAY_MS = 86_400_000
const dayNumber = (date: string) => Math.floor(Date.parse(`${date}T00:00:00Z`) / DAY_MS)
const dateOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10)
const isDate = (text: string | null): text is string =>
  text !== null && /^\d{4}-\d{2}-\d{2}$/.test(text) && !Number.isNaN(Date.parse(`${text}T00:00:00Z`))

/** One ad's day, or undefined on a day it did not deliver (about one in ten). */
export const insightOf = (account: AccountRecord, ad: AdRecord, date: string) => {
  const h = hashOf(`${ad.id}|${date}`)
  if (h % 10 === 0) return undefined
  const impressions = 200 + (h % 1_800)
  const clicks = Math.max(1, Math.floor(impressions * (1 + ((h >>> 8) % 40) / 10) / 100))
  const spend_minor = clicks * (30 + ((h >>> 12) % 120))
  const conversions = Math.floor(clicks / (8 + ((h >>> 16) % 8)))
  const chats = ad.creative.destination_type === null ? 0 : Math.floor(clicks / (3 + ((h >>> 20) % 4)))
  return {
    date,
    campaign_id: ad.campaign_id,
    ad_set_id: ad.ad_set_id,
    ad_id: ad.id,
    currency: account.currency,
    spend_minor,
    impressions,
    clicks,
    conversions,
    chats
  }
}

/** A page of insights over (day, ad) positions; the cursor is the next position, so nothing is held. */
const insightsPage = (account: AccountRecord, query: URLSearchParams): SandboxReply => {
  const since = query.get("since")
  const until = query.get("until")
  if (!isDate(since) || !isDate(until)) return invalid("since and until must be dates (YYYY-MM-DD)")
  const first = Math.max(dayNumber(since), dayNumber(DELIVERY_START))
  const last = Math.min(dayNumber(until), Math.floor(Date.now() / DAY_MS))
  if (dayNumber(until) < dayNumber(since)) return invalid("until is before since")
  if (dayNumber(until) - dayNumber(since) + 1 > MAX_RANGE_DAYS) return invalid(`a range is at most ${MAX_RANGE_DAYS} days`)
  const limitText = query.get("limit")
  const limit = limitText === null ? 100 : Number(limitText)
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) return invalid("limit must be an integer from 1 to 500")
  const afterText = query.get("after")
  const start = afterText === null ? 0 : Number(afterText)
  if (!Number.isInteger(start) || start < 0) return invalid("after is not a cursor this provider issued")
  const perDay = account.ads.length
  const end = last < first || perDay === 0 ? 0 : (last - first + 1) * perDay
  const data: Array<NonNullable<ReturnType<typeof insightOf>>> = []
  let position = start
  while (position < end && data.length < limit) {
    const ad = account.ads[position % perDay]
    const row = ad === undefined ? undefined : insightOf(account, ad, dateOf(first + Math.floor(position / perDay)))
    if (row !== undefined) data.push(row)
    position++
  }
  return ok({ data, paging: { next: position < end ? String(position) : null } })
}

// --- Wire shapes ------------------------------------------------------------------------------

const campaignWire = (c: CampaignRecord) => ({
  id: c.id,
  account_id: c.account_id,
  name: c.name,
  status: c.status,
  objective: c.objective,
  daily_budget_minor: c.daily_budget_minor,
  lifetime_budget_minor: c.lifetime_budget_minor
})

const adSetWire = (s: AdSetRecord) => ({
  id: s.id,
  account_id: s.account_id,
  campaign_id: s.campaign_id,
  name: s.name,
  status: s.status,
  learning_stage_status: s.learning_stage_status,
  daily_budget_minor: s.daily_budget_minor,
  lifetime_budget_minor: s.lifetime_budget_minor
})

const adWire = (a: AdRecord) => ({
  id: a.id,
  account_id: a.account_id,
  campaign_id: a.campaign_id,
  ad_set_id: a.ad_set_id,
  name: a.name,
  status: a.status,
  creative: a.creative
})

// --- Field checks -----------------------------------------------------------------------------

const STATUSES: ReadonlyArray<AdStatus> = ["active", "paused", "archived", "deleted"]

/** `active`/`ACTIVE` alike (the real platform speaks upper case). */
const statusOf = (value: unknown, allowed: ReadonlyArray<AdStatus>): AdStatus | undefined =>
  typeof value === "string" ? allowed.find((status) => status === value.toLowerCase()) : undefined

const isBudget = (value: unknown): value is number | null =>
  value === null || (typeof value === "number" && Number.isInteger(value) && value > 0 && value <= 1_000_000_000)

type Target = CampaignRecord | AdSetRecord

/** Applies status and budget fields; a reply when a field is refused (then nothing changed). */
const applyFields = (
  target: Target | AdRecord,
  fields: Readonly<Record<string, unknown>>,
  allowedStatuses: ReadonlyArray<AdStatus>
): SandboxReply | undefined => {
  const { status, daily_budget_minor, lifetime_budget_minor, name } = fields
  const nextStatus = status === undefined ? undefined : statusOf(status, allowedStatuses)
  if (status !== undefined && nextStatus === undefined) return invalid(`status must be one of ${allowedStatuses.join(", ")}`)
  const budgeted = "daily_budget_minor" in target
  if ((daily_budget_minor !== undefined || lifetime_budget_minor !== undefined) && !budgeted) {
    return invalid("an ad has no budget: set it on its ad set or campaign")
  }
  if (daily_budget_minor !== undefined && !isBudget(daily_budget_minor)) return invalid("daily_budget_minor must be a positive integer or null")
  if (lifetime_budget_minor !== undefined && !isBudget(lifetime_budget_minor)) {
    return invalid("lifetime_budget_minor must be a positive integer or null")
  }
  if (name !== undefined && (typeof name !== "string" || name.length === 0 || name.length > 400)) return invalid("name must be 1 to 400 characters")
  if (nextStatus !== undefined) target.status = nextStatus
  if (typeof name === "string") target.name = name
  if (budgeted) {
    if (daily_budget_minor !== undefined && isBudget(daily_budget_minor)) target.daily_budget_minor = daily_budget_minor
    if (lifetime_budget_minor !== undefined && isBudget(lifetime_budget_minor)) target.lifetime_budget_minor = lifetime_budget_minor
  }
  return undefined
}

const CREATIVE_FIELDS = [
  "thumbnail_url",
  "destination_type",
  "destination_phone_number",
  "destination_page_id",
  "call_to_action_type",
  "greeting",
  "greeting_status"
] as const

const applyCreative = (ad: AdRecord, fields: Readonly<Record<string, unknown>>): SandboxReply | undefined => {
  const next: Record<string, unknown> = { ...ad.creative }
  let changed = false
  for (const field of CREATIVE_FIELDS) {
    const value = fields[field]
    if (value === undefined) continue
    if (value !== null && (typeof value !== "string" || value.length > 2_000)) return invalid(`${field} must be a string or null`)
    next[field] = value
    changed = true
  }
  if (fields["welcome_message"] !== undefined) {
    next["welcome_message"] = fields["welcome_message"]
    changed = true
  }
  if (!changed) return invalid(`send at least one of ${[...CREATIVE_FIELDS, "welcome_message"].join(", ")}`)
  ad.creative = {
    id: ad.creative.id,
    url_tags: ad.creative.url_tags,
    thumbnail_url: stringOrNull(next["thumbnail_url"]),
    destination_type: stringOrNull(next["destination_type"]),
    destination_phone_number: stringOrNull(next["destination_phone_number"]),
    destination_page_id: stringOrNull(next["destination_page_id"]),
    call_to_action_type: stringOrNull(next["call_to_action_type"]),
    greeting: stringOrNull(next["greeting"]),
    greeting_status: stringOrNull(next["greeting_status"]),
    welcome_message: next["welcome_message"] ?? null
  }
  if (ad.creative.id !== null) ad.creatives.set(ad.creative.id, ad.creative)
  return undefined
}

// --- URL tags (issue 19): a creative change is a new creative and restarts learning -----------

/** A URL-tag string as the platform takes it: `key=value` pairs joined by `&`, no `?` or `#`. */
const URL_TAGS = /^[A-Za-z0-9_.~-]+=[^&?#\s]+(&[A-Za-z0-9_.~-]+=[^&?#\s]+)*$/

/** Why the ad's creative cannot change now (then nothing changes), as the real platform refuses it. */
const creativeRefusal = (ad: AdRecord): SandboxReply | undefined =>
  ad.status === "archived" || ad.status === "deleted"
    ? refuse(400, "ad_not_editable", `the ad is ${ad.status}`)
    : ad.creative_in_review
    ? refuse(400, "creative_in_review", "the ad's creative is under review; try again once the review ends")
    : undefined

/** Like the real platform: a new creative (or another one) on an ad puts its ad set back into learning. */
const restartLearning = (world: World, ad: AdRecord) => {
  const set = world.adSets.get(ad.ad_set_id)
  if (set !== undefined) set.learning_stage_status = "LEARNING"
}

/** `POST /v1/ads/:id/creatives {url_tags}`: a copy of the current creative with these URL tags, under a new id. */
const newTaggedCreative = (world: World, ad: AdRecord, fields: Readonly<Record<string, unknown>>): SandboxReply => {
  const tags = fields["url_tags"]
  if (typeof tags !== "string" || tags.length > 1_000 || !URL_TAGS.test(tags)) {
    return invalid("url_tags must be key=value pairs joined by & (at most 1000 characters)")
  }
  const refused = creativeRefusal(ad)
  if (refused !== undefined) return refused
  if (ad.creative.destination_type !== null) return refuse(400, "not_a_link_ad", "URL tags apply to ads that link to a website")
  const previous = ad.creative.id
  const id = `cr_${ad.id}_${world.nextCreative++}`
  ad.creative = { ...ad.creative, id, url_tags: tags }
  ad.creatives.set(id, ad.creative)
  restartLearning(world, ad)
  return ok({ id, previous_creative_id: previous }, 201)
}

/** `POST /v1/ads/:id {creative_id?, status?, name?}`: `creative_id` puts the ad on a creative it carried before. */
const adWrite = (world: World, ad: AdRecord, fields: Readonly<Record<string, unknown>>): SandboxReply | undefined => {
  const creativeId = fields["creative_id"]
  if (creativeId === undefined) return applyFields(ad, fields, WRITABLE_STATUSES)
  const creative = typeof creativeId === "string" ? ad.creatives.get(creativeId) : undefined
  if (creative === undefined) return invalid("creative_id must name a creative this ad has carried")
  const refused = creativeRefusal(ad) ?? applyFields(ad, fields, WRITABLE_STATUSES)
  if (refused !== undefined) return refused
  if (ad.creative.id !== creative.id) {
    ad.creative = creative
    restartLearning(world, ad)
  }
  return undefined
}

const stringOrNull = (value: unknown): string | null => (typeof value === "string" ? value : null)

// --- Routes -----------------------------------------------------------------------------------

const accountFor = (world: World, ctx: ApiContext): AccountRecord | SandboxReply => {
  const id = ctx.params["account"] ?? ""
  const account = world.accounts.find((candidate) => candidate.id === id)
  return account === undefined || !ctx.reaches(id) ? notFound(`ad account ${id}`) : account
}

const isAccount = (value: AccountRecord | SandboxReply): value is AccountRecord => "campaigns" in value

/** An object by id, only when the grant reaches its account. */
const reachable = <A extends { readonly account_id: string }>(
  index: Map<string, A>,
  ctx: ApiContext,
  what: string
): A | SandboxReply => {
  const id = ctx.params["id"] ?? ""
  const found = index.get(id)
  return found === undefined || !ctx.reaches(found.account_id) ? notFound(`${what} ${id}`) : found
}

const isReply = (value: object): value is SandboxReply => "status" in value && "body" in value && !("account_id" in value)

const listRoute = (
  path: `/v1/${string}`,
  items: (account: AccountRecord) => ReadonlyArray<unknown>
): SandboxRoute<World> => ({
  method: "GET",
  path,
  handler: (world, ctx) => {
    const account = accountFor(world, ctx)
    return isAccount(account) ? paged(items(account), ctx.query) : account
  }
})

const getRoute = <A extends { readonly account_id: string }>(
  path: `/v1/${string}`,
  index: (world: World) => Map<string, A>,
  what: string,
  wire: (value: A) => unknown
): SandboxRoute<World> => ({
  method: "GET",
  path,
  handler: (world, ctx) => {
    const found = reachable(index(world), ctx, what)
    return isReply(found) ? found : ok(wire(found))
  }
})

const writeRoute = <A extends { readonly account_id: string; readonly id: string }>(
  path: `/v1/${string}`,
  index: (world: World) => Map<string, A>,
  what: string,
  apply: (found: A, fields: Readonly<Record<string, unknown>>, world: World) => SandboxReply | undefined
): SandboxRoute<World> => ({
  method: "POST",
  path,
  handler: (world, ctx) => {
    const found = reachable(index(world), ctx, what)
    if (isReply(found)) return found
    const missing = ctx.requireWrite()
    if (missing !== undefined) return missing
    const refused = apply(found, bodyFields(ctx.body), world)
    if (refused !== undefined) return refused
    ctx.countWrite()
    noteWrite(world, found.id, bodyFields(ctx.body))
    return ok({ success: true })
  }
})

const WRITABLE_STATUSES: ReadonlyArray<AdStatus> = ["active", "paused"]

// --- Ad actions (issue 19): the platform's own budget minimum ---------------------------------

/**
 * The platform's own minimum for a daily or lifetime budget through the API, in minor units of
 * any currency: above the service's floor (100), so a budget between the two reaches the
 * platform and is refused with its own `budget_below_minimum` (the service answers 422).
 * `PATCH _state` is not held to it (tests set any budget).
 */
export const PLATFORM_MIN_BUDGET_MINOR = 500

const belowMinimum = (fields: Readonly<Record<string, unknown>>): SandboxReply | undefined => {
  for (const field of ["daily_budget_minor", "lifetime_budget_minor"] as const) {
    const value = fields[field]
    if (typeof value === "number" && value < PLATFORM_MIN_BUDGET_MINOR) {
      return refuse(400, "budget_below_minimum", `${field} must be at least ${PLATFORM_MIN_BUDGET_MINOR} in the account's currency`)
    }
  }
  return undefined
}

const routes: ReadonlyArray<SandboxRoute<World>> = [
  listRoute("/v1/accounts/:account/campaigns", (account) => account.campaigns.map(campaignWire)),
  listRoute("/v1/accounts/:account/adsets", (account) => account.campaigns.flatMap((c) => c.ad_sets.map(adSetWire))),
  listRoute("/v1/accounts/:account/ads", (account) => account.ads.map(adWire)),
  listRoute("/v1/accounts/:account/pixels", (account) => account.pixels),
  listRoute("/v1/accounts/:account/datasets", (account) => account.datasets),
  {
    method: "GET",
    path: "/v1/accounts/:account/insights",
    handler: (world, ctx) => {
      const account = accountFor(world, ctx)
      return isAccount(account) ? insightsPage(account, ctx.query) : account
    }
  },
  {
    method: "POST",
    path: "/v1/accounts/:account/datasets",
    handler: (world, ctx) => {
      const account = accountFor(world, ctx)
      if (!isAccount(account)) return account
      const missing = ctx.requireWrite()
      if (missing !== undefined) return missing
      const name = bodyFields(ctx.body)["name"]
      if (typeof name !== "string" || name.length === 0 || name.length > 200) return invalid("name must be 1 to 200 characters")
      // Platform-Safe (issue 20 part 4): an account holds a bounded number of datasets, as on the real platform.
      if (account.datasets.length >= MAX_DATASETS_PER_ACCOUNT) return datasetLimitReached()
      const dataset = { id: `ds_${account.id.slice(4)}_${world.nextDataset++}`, name }
      account.datasets.push(dataset)
      world.datasets.set(dataset.id, account.id)
      ctx.countWrite()
      return ok(dataset, 201)
    }
  },
  getRoute("/v1/campaigns/:id", (world) => world.campaigns, "campaign", campaignWire),
  getRoute("/v1/adsets/:id", (world) => world.adSets, "ad set", adSetWire),
  getRoute("/v1/ads/:id", (world) => world.ads, "ad", adWire),
  writeRoute("/v1/campaigns/:id", (world) => world.campaigns, "campaign", (c, f) => belowMinimum(f) ?? applyFields(c, f, WRITABLE_STATUSES)),
  writeRoute("/v1/adsets/:id", (world) => world.adSets, "ad set", (s, f) => belowMinimum(f) ?? applyFields(s, f, WRITABLE_STATUSES)),
  writeRoute("/v1/ads/:id", (world) => world.ads, "ad", (a, f, world) => adWrite(world, a, f)),
  writeRoute("/v1/ads/:id/creative", (world) => world.ads, "ad", applyCreative),
  {
    method: "POST",
    path: "/v1/ads/:id/creatives",
    handler: (world, ctx) => {
      const ad = reachable(world.ads, ctx, "ad")
      if (isReply(ad)) return ad
      const missing = ctx.requireWrite()
      if (missing !== undefined) return missing
      const reply = newTaggedCreative(world, ad, bodyFields(ctx.body))
      if (reply.status === 201) ctx.countWrite()
      return reply
    }
  },
  {
    method: "POST",
    path: "/v1/datasets/:id/events",
    handler: (world, ctx) => {
      const id = ctx.params["id"] ?? ""
      const accountId = world.datasets.get(id)
      if (accountId === undefined || !ctx.reaches(accountId)) return notFound(`dataset ${id}`)
      const data = bodyFields(ctx.body)["data"]
      if (!Array.isArray(data) || data.length === 0 || data.length > 1_000) return invalid("data must be an array of 1 to 1000 events")
      for (const event of data) {
        const fields = bodyFields(event)
        if (typeof fields["event_name"] !== "string" || typeof fields["event_time"] !== "number") {
          return invalid("each event needs event_name (string) and event_time (unix seconds)")
        }
      }
      const receivedAt = new Date(ctx.nowMs).toISOString()
      for (const event of data) {
        world.receivedEvents.push({ dataset_id: id, account_id: accountId, received_at: receivedAt, ...bodyFields(event) })
      }
      if (world.receivedEvents.length > KEPT_EVENTS) world.receivedEvents.splice(0, world.receivedEvents.length - KEPT_EVENTS)
      return ok({ events_received: data.length, fbtrace_id: `trace_${world.receivedEvents.length}` })
    }
  },
  {
    method: "GET",
    path: "/v1/leads/:id",
    handler: (world, ctx) => {
      const lead = world.leads.get(ctx.params["id"] ?? "")
      const ad = lead === undefined ? undefined : world.ads.get(lead.ad_id)
      return lead === undefined || ad === undefined || !ctx.reaches(ad.account_id) ? notFound(`lead ${ctx.params["id"]}`) : ok(lead)
    }
  },
  // Platform-Safe (issue 20 part 4): datasets' custom conversions, ad-set optimization, copies.
  ...platformSafeRoutes,
  // Customer-list audiences (issue 20 part 5): custom audiences, usersreplace, lookalikes.
  ...audienceRoutes
]

// --- Test controls ----------------------------------------------------------------------------

const stateOf = (world: World) => ({
  accounts: world.accounts.map((account) => ({
    id: account.id,
    name: account.name,
    currency: account.currency,
    timezone: account.timezone,
    campaigns: account.campaigns.map((c) => ({
      id: c.id,
      name: c.name,
      status: c.status,
      objective: c.objective,
      daily_budget_minor: c.daily_budget_minor,
      lifetime_budget_minor: c.lifetime_budget_minor,
      ad_sets: c.ad_sets.map((s) => ({
        id: s.id,
        name: s.name,
        status: s.status,
        learning_stage_status: s.learning_stage_status,
        daily_budget_minor: s.daily_budget_minor,
        lifetime_budget_minor: s.lifetime_budget_minor,
        ads: s.ads.map((a) => ({
          id: a.id,
          name: a.name,
          status: a.status,
          destination_type: a.creative.destination_type,
          creative_id: a.creative.id,
          url_tags: a.creative.url_tags,
          creative_in_review: a.creative_in_review
        }))
      }))
    })),
    pixels: account.pixels,
    datasets: account.datasets
  })),
  received_events: world.receivedEvents,
  leads: [...world.leads.values()],
  platform_safe: platformSafeState(world),
  custom_audiences: audiencesState(world)
})

const patchObject = (world: World, object: Readonly<Record<string, unknown>> & { readonly id: string }): SandboxReply | undefined => {
  const target = world.campaigns.get(object.id) ?? world.adSets.get(object.id) ?? world.ads.get(object.id)
  if (target === undefined) return notFound(`object ${object.id}`)
  const stageInput = object["learning_stage_status"]
  const stage = LEARNING.find((candidate) => candidate !== null && candidate === stageInput)
  if (stageInput !== undefined && (!("learning_stage_status" in target) || stage === undefined)) {
    return invalid("learning_stage_status (ad sets) must be LEARNING, SUCCESS or FAIL")
  }
  const objective = object["objective"]
  if (objective !== undefined && (!("objective" in target) || typeof objective !== "string")) {
    return invalid("objective (campaigns) must be a string")
  }
  const review = object["creative_in_review"]
  if (review !== undefined && (!("creative_in_review" in target) || typeof review !== "boolean")) {
    return invalid("creative_in_review (ads) must be a boolean")
  }
  const tags = object["url_tags"]
  if (tags !== undefined && (!("creatives" in target) || typeof tags !== "string" || !URL_TAGS.test(tags))) {
    return invalid("url_tags (ads) must be key=value pairs joined by &")
  }
  const refused = applyFields(target, object, STATUSES)
  if (refused !== undefined) return refused
  if ("creative_in_review" in target && typeof review === "boolean") target.creative_in_review = review
  // As in the platform's own UI: new URL tags are a new creative (learning restarts).
  if ("creatives" in target && typeof tags === "string") {
    const id = `cr_${target.id}_${world.nextCreative++}`
    target.creative = { ...target.creative, id, url_tags: tags }
    target.creatives.set(id, target.creative)
    restartLearning(world, target)
  }
  if ("learning_stage_status" in target && stage !== undefined) target.learning_stage_status = stage
  if ("objective" in target && typeof objective === "string") target.objective = objective
  return undefined
}

const defaultLeadFields = (n: number) => [
  { name: "full_name", values: [`Sandbox Lead ${n}`] },
  { name: "email", values: [`lead${n}@example.com`] },
  { name: "phone_number", values: [`+1555010${String(n).padStart(4, "0")}`] }
]

const isFieldData = (value: unknown): value is ReadonlyArray<{ readonly name: string; readonly values: ReadonlyArray<string> }> =>
  Array.isArray(value) && value.every((entry) => {
    const fields = bodyFields(entry)
    return typeof fields["name"] === "string" && Array.isArray(fields["values"]) &&
      fields["values"].every((v: unknown) => typeof v === "string")
  })

const arriveLead = (world: World, arrival: Readonly<Record<string, unknown>>, ctx: { readonly nowMs: number; readonly push: (accountId: string, payload: unknown) => void }) => {
  const ad = typeof arrival["ad_id"] === "string" ? world.ads.get(arrival["ad_id"]) : undefined
  if (ad === undefined) return invalid("a lead needs the ad_id of an existing ad")
  if (arrival["field_data"] !== undefined && !isFieldData(arrival["field_data"])) {
    return invalid("field_data must be [{name, values: [string]}]")
  }
  const n = world.nextLead++
  const leadgenId = typeof arrival["leadgen_id"] === "string" && arrival["leadgen_id"].length > 0 ? arrival["leadgen_id"] : `lead_${n}`
  if (world.leads.has(leadgenId)) return invalid(`lead ${leadgenId} already arrived`)
  const accountNumber = ad.account_id.slice(4)
  const lead: Lead = {
    leadgen_id: leadgenId,
    form_id: `form_${accountNumber}_1`,
    ad_id: ad.id,
    adgroup_id: ad.ad_set_id,
    campaign_id: ad.campaign_id,
    page_id: `page_${accountNumber}`,
    created_time: new Date(ctx.nowMs).toISOString(),
    field_data: isFieldData(arrival["field_data"]) ? arrival["field_data"] : defaultLeadFields(n)
  }
  world.leads.set(leadgenId, lead)
  ctx.push(ad.account_id, {
    object: "page",
    entry: [{
      id: ad.account_id,
      time: Math.floor(ctx.nowMs / 1000),
      changes: [{
        field: "leadgen",
        value: {
          leadgen_id: lead.leadgen_id,
          form_id: lead.form_id,
          ad_id: lead.ad_id,
          adgroup_id: lead.adgroup_id,
          campaign_id: lead.campaign_id,
          created_time: Math.floor(ctx.nowMs / 1000),
          page_id: lead.page_id
        }
      }]
    }]
  })
  return ok({ lead }, 201)
}

const arriveGeneratedAccount = (world: World, arrival: Readonly<Record<string, unknown>>) => {
  const ads = arrival["ads"] ?? 5_000
  if (typeof ads !== "number" || !Number.isInteger(ads) || ads < 1 || ads > 50_000) return invalid("ads must be an integer from 1 to 50000")
  const currency = arrival["currency"] ?? "USD"
  if (typeof currency !== "string" || !/^[A-Z]{3}$/.test(currency)) return invalid("currency must be an ISO 4217 code")
  const requested = arrival["id"]
  const number = typeof requested === "string" ? requested.replace(/^act_/, "") : String(2_000 + world.accounts.length)
  if (!/^\d{1,15}$/.test(number)) return invalid("id must be act_<digits>")
  if (world.accounts.some((account) => account.id === `act_${number}`)) return invalid(`account act_${number} exists`)
  // 10 ads per ad set, 10 ad sets per campaign: 5,000 ads are 50 campaigns of 100.
  const plans: Array<CampaignPlan> = []
  for (let left = ads, c = 0; left > 0; c++) {
    const inCampaign = Math.min(left, 100)
    const adSets = Math.ceil(inCampaign / 10)
    plans.push({
      name: `Generated ${c + 1}`,
      objective: c % 3 === 0 ? "OUTCOME_ENGAGEMENT" : "OUTCOME_SALES",
      chat: c % 3 === 0,
      campaignBudget: c % 2 === 0 ? 10_000 : null,
      adSets,
      adsPerSet: 10,
      maxAds: inCampaign
    })
    left -= inCampaign
  }
  const account = buildAccount(world, { number, name: `Generated ${number}`, currency, timezone: "UTC" }, plans)
  // Listed first, so that the next consent's `one_account` persona reaches it (decision 0056).
  world.accounts.unshift(account)
  return ok({
    account: {
      id: account.id,
      currency,
      campaigns: account.campaigns.length,
      ad_sets: account.campaigns.reduce((n, c) => n + c.ad_sets.length, 0),
      ads: account.ads.length
    }
  }, 201)
}

export const adplatformSandbox = defineSandbox<World>({
  provider: "adplatform",
  seed,
  accounts: (world) =>
    world.accounts.map((account) => ({ id: account.id, name: account.name, currency: account.currency, timezone: account.timezone })),
  readScopes: ["ads_read", "business_management", "leads_retrieval"],
  writeScope: "ads_management",
  routes,
  state: stateOf,
  patch: patchObject,
  arrive: (world, arrival, ctx) => {
    switch (arrival["kind"]) {
      case "lead":
        return arriveLead(world, arrival, ctx)
      case "generated_account":
        return arriveGeneratedAccount(world, arrival)
      default:
        return invalid(`unknown arrival kind ${String(arrival["kind"])}: lead or generated_account`)
    }
  },
  grantDeath: (accountId, userId, nowSeconds) => ({
    object: "permissions",
    entry: [{ id: accountId, time: nowSeconds, changes: [{ field: "deauthorize", value: { user_id: userId } }] }]
  })
})
