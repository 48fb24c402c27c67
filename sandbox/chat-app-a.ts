/**
 * `chat_app_a`, the business-chat platform: business accounts with phone numbers, message
 * templates with daily analytics (off per account until the first analytics call, which switches
 * them on and answers 409 `insights_enabling` with `retry_after_seconds` until they are ready, as
 * the real platform does), conversations and messages on the shared model (text or template
 * sends, inbound messages carrying the click-to-chat referral with `ctwa_clid`), and the business
 * account's dataset.
 *
 * `_state`: `{business_accounts: [{id, name, currency, timezone, insights: "off" | "enabling" |
 * "on", insights_ready_at, insights_delay_seconds, phone_numbers: [{id, display_phone_number,
 * verified_name}]}], templates: [{id, account_id, name, language, status, category}],
 * conversations, messages (as messaging.ts), datasets: [{id, account_id, name}], received_events:
 * [{dataset_id, account_id, received_at, ...event}], write_count}`.
 * Arrivals: `{kind: "message", phone_number_id? | account_id?, from, name?, text, referral?:
 * {ad_id, ctwa_clid?, headline?}}` and `{kind: "status", message_id, status}`.
 */
import { type ApiContext, defineSandbox, hashOf, invalid, notFound, ok, paged, refuse, type SandboxReply } from "./kind.ts"
import {
  conversationRoutes,
  freeTextRefusal,
  SEEDED_REFERRAL_ADS,
  grantDeathPayload,
  isRecord,
  makeMessagingStore,
  type Message,
  type MessagingStore,
  parseReferral,
  patchIn,
  statusArrival,
  text
} from "./messaging.ts"

interface BusinessAccount {
  id: string
  name: string
  currency: string
  timezone: string
  insights: "off" | "enabling" | "on"
  insights_ready_at: string | null
  /** How long switching analytics on takes; a test may shorten it through `PATCH _state`. */
  insights_delay_seconds: number
  phone_numbers: Array<{ id: string; display_phone_number: string; verified_name: string }>
  [field: string]: unknown
}

interface Template {
  id: string
  account_id: string
  name: string
  language: string
  status: "APPROVED" | "PENDING" | "REJECTED" | "PAUSED"
  category: "MARKETING" | "UTILITY" | "AUTHENTICATION"
  [field: string]: unknown
}

interface ChatDataset {
  id: string
  account_id: string
  name: string
  [field: string]: unknown
}

interface ChatWorld {
  readonly accounts: Array<BusinessAccount>
  readonly templates: Array<Template>
  readonly datasets: Array<ChatDataset>
  /** What the datasets' conversions endpoint accepted, newest last (the last KEPT_EVENTS). */
  readonly receivedEvents: Array<Record<string, unknown>>
  readonly store: MessagingStore
}

const KEPT_EVENTS = 10_000

const TEMPLATE_STATUSES: ReadonlyArray<string> = ["APPROVED", "PENDING", "REJECTED", "PAUSED"]
const DAY_MS = 86_400_000
const MAX_ANALYTICS_DAYS = 400
const isDate = (value: string | null): value is string =>
  value !== null && /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(value))

/** The platform's webhook: `{object, entry: [{id: <business account>, changes: [{field: "messages", value}]}]}`. */
const payload = (world: ChatWorld, message: Message): unknown => {
  const account = world.accounts.find((a) => a.id === message.account_id)
  const phone = account?.phone_numbers[0]
  const conversation = world.store.conversations.find((c) => c.id === message.conversation_id)
  const timestamp = String(Math.floor(Date.parse(message.created_at) / 1000))
  const metadata = { display_phone_number: phone?.display_phone_number ?? "", phone_number_id: phone?.id ?? "" }
  const value = message.direction === "inbound"
    ? {
      messaging_product: "chat_app_a",
      metadata,
      contacts: [{ wa_id: message.from, profile: { name: conversation?.contact_name ?? message.from } }],
      messages: [{
        id: message.id,
        from: message.from,
        timestamp,
        type: "text",
        text: { body: message.text },
        ...(message.referral !== null
          ? {
            referral: {
              source_type: "ad",
              source_id: message.referral.ad_id,
              ctwa_clid: message.referral.ctwa_clid ?? null,
              headline: message.referral.headline ?? null
            }
          }
          : {})
      }]
    }
    : {
      messaging_product: "chat_app_a",
      metadata,
      statuses: [{ id: message.id, status: message.status, timestamp: String(Math.floor(Date.now() / 1000)), recipient_id: message.to }]
    }
  return { object: "chat_app_a_business_account", entry: [{ id: message.account_id, changes: [{ field: "messages", value }] }] }
}

/** Seeded daily figures per approved template: the same range always answers the same numbers. */
const analytics = (world: ChatWorld, account: BusinessAccount, ctx: ApiContext): SandboxReply => {
  const since = ctx.query.get("since")
  const until = ctx.query.get("until")
  if (!isDate(since) || !isDate(until) || since > until) return invalid("since and until must be YYYY-MM-DD, since <= until")
  if ((Date.parse(until) - Date.parse(since)) / DAY_MS >= MAX_ANALYTICS_DAYS) return invalid(`at most ${MAX_ANALYTICS_DAYS} days at once`)
  // Template analytics of an account type that refuses the switch (issue 21 part 6; a test sets
  // `insights_supported: false` through `PATCH _state`).
  if (account["insights_supported"] === false) {
    return refuse(422, "insights_unsupported", "This account type cannot switch template analytics on.")
  }
  if (account.insights === "off") {
    account.insights = "enabling"
    account.insights_ready_at = new Date(ctx.nowMs + account.insights_delay_seconds * 1000).toISOString()
  }
  if (account.insights === "enabling") {
    const readyAt = Date.parse(account.insights_ready_at ?? new Date(ctx.nowMs).toISOString())
    if (ctx.nowMs < readyAt) {
      return refuse(409, "insights_enabling", "Template analytics are being switched on for this account.", {
        retry_after_seconds: Math.max(1, Math.ceil((readyAt - ctx.nowMs) / 1000))
      })
    }
    account.insights = "on"
  }
  const wanted = ctx.query.get("template_ids")?.split(",").filter((id) => id.length > 0) ?? []
  const chosen = world.templates.filter((t) =>
    t.account_id === account.id && t.status === "APPROVED" && (wanted.length === 0 || wanted.includes(t.id))
  )
  const rows: Array<Record<string, unknown>> = []
  for (let day = Date.parse(since); day <= Date.parse(until); day += DAY_MS) {
    const date = new Date(day).toISOString().slice(0, 10)
    for (const template of chosen) {
      const sent = hashOf(`${template.id}:${date}`) % 120
      const delivered = Math.floor(sent * 0.92)
      const read = Math.floor(delivered * 0.7)
      rows.push({
        template_id: template.id,
        date,
        sent,
        delivered,
        read,
        button_clicks: Math.floor(read * 0.2),
        cost_minor: sent * (template.category === "MARKETING" ? 5 : 2),
        currency: account.currency
      })
    }
  }
  return paged(rows, ctx.query)
}

const phoneOf = (world: ChatWorld, phoneId: string) => {
  for (const account of world.accounts) {
    const phone = account.phone_numbers.find((p) => p.id === phoneId)
    if (phone !== undefined) return { account, phone }
  }
  return undefined
}

const send = (world: ChatWorld, ctx: ApiContext): SandboxReply => {
  const phoneId = ctx.params["phone"] ?? ""
  const found = phoneOf(world, phoneId)
  if (found === undefined || !ctx.reaches(found.account.id)) return notFound(`phone number ${phoneId}`)
  const denied = ctx.requireWrite()
  if (denied !== undefined) return denied
  const body = isRecord(ctx.body) ? ctx.body : {}
  const to = text(body["to"])
  if (to === null) return invalid("to is required")
  const type = body["type"] ?? "text"
  let words: string | null = null
  let template: { name: string; language: string } | null = null
  if (type === "text") {
    words = isRecord(body["text"]) ? text(body["text"]["body"]) : null
    if (words === null) return invalid("text.body is required")
    // Free text only inside the service window; a template opens a conversation any time.
    const refused = freeTextRefusal(world.store, found.account.id, to, ctx.nowMs)
    if (refused !== undefined) return refused
  } else if (type === "template") {
    const requested = isRecord(body["template"]) ? body["template"] : {}
    const name = text(requested["name"])
    const language = text(requested["language"]) ?? "en_US"
    const known = world.templates.find((t) => t.account_id === found.account.id && t.name === name && t.language === language)
    if (known === undefined) return refuse(404, "template_not_found", `No template ${String(name)} in ${language}.`)
    if (known.status !== "APPROVED") return refuse(400, "template_not_approved", `Template ${known.name} is ${known.status}.`)
    template = { name: known.name, language }
  } else {
    return invalid("type must be text or template")
  }
  const contactName = world.store.conversations.find((c) => c.account_id === found.account.id && c.contact_id === to)?.contact_name ?? to
  const message = world.store.record({
    account_id: found.account.id, direction: "outbound", from: found.phone.display_phone_number, to, type, text: words, template,
    referral: null, status: "sent", contactId: to, contactName, at: new Date(ctx.nowMs).toISOString()
  })
  ctx.countWrite()
  return ok({ id: message.id, conversation_id: message.conversation_id })
}

/** The business account named by `:account`, if the grant reaches it. */
const reached = (world: ChatWorld, ctx: ApiContext) => {
  const id = ctx.params["account"] ?? ""
  const account = world.accounts.find((a) => a.id === id)
  return account !== undefined && ctx.reaches(id) ? account : undefined
}

export const chatAppASandbox = defineSandbox<ChatWorld>({
  provider: "chat_app_a",
  seed: () => {
    const store = makeMessagingStore("ca")
    const accounts: Array<BusinessAccount> = [1, 2, 3].map((n) => ({
      id: `ca_waba_000${n}`,
      name: `Sandbox Business ${n}`,
      // Alike the ad-platform sandbox's accounts (act_1001 USD, act_1002 EUR), whose chat ads point at these numbers.
      currency: n === 2 ? "EUR" : "USD",
      timezone: "UTC",
      insights: "off",
      insights_ready_at: null,
      insights_delay_seconds: 2,
      phone_numbers: [{ id: `ca_phone_000${n}`, display_phone_number: `+1555000100${n}`, verified_name: `Sandbox Business ${n}` }]
    }))
    const templates: Array<Template> = accounts.flatMap((account) =>
      [
        { name: "welcome", category: "MARKETING" as const, status: "APPROVED" as const },
        { name: "order_update", category: "UTILITY" as const, status: "APPROVED" as const },
        { name: "spring_promo", category: "MARKETING" as const, status: "PENDING" as const }
      ].map((t, i) => ({ id: `ca_tpl_${account.id.slice(-4)}_${i + 1}`, account_id: account.id, language: "en_US", ...t }))
    )
    accounts.forEach((account, i) =>
      store.seed(account.id, account.phone_numbers[0]?.display_phone_number ?? "", SEEDED_REFERRAL_ADS[i] ?? "", true)
    )
    return { accounts, templates, datasets: [], receivedEvents: [], store }
  },
  accounts: (world) => world.accounts.map((a) => ({ id: a.id, name: a.name, currency: a.currency, timezone: a.timezone })),
  readScopes: ["business_management"],
  writeScope: "business_messaging",
  routes: [
    {
      method: "GET",
      path: "/v1/accounts/:account",
      handler: (world, ctx) => {
        const account = reached(world, ctx)
        return account === undefined ? notFound(`business account ${ctx.params["account"]}`) : ok(account)
      }
    },
    {
      method: "GET",
      path: "/v1/accounts/:account/phone_numbers",
      handler: (world, ctx) => {
        const account = reached(world, ctx)
        return account === undefined ? notFound(`business account ${ctx.params["account"]}`) : paged(account.phone_numbers, ctx.query)
      }
    },
    {
      method: "GET",
      path: "/v1/accounts/:account/templates",
      handler: (world, ctx) => {
        const account = reached(world, ctx)
        return account === undefined
          ? notFound(`business account ${ctx.params["account"]}`)
          : paged(world.templates.filter((t) => t.account_id === account.id), ctx.query)
      }
    },
    // Template creation (issue 21 part 6): PENDING until reviewed; a name is unique per language.
    {
      method: "POST",
      path: "/v1/accounts/:account/templates",
      handler: (world, ctx) => {
        const account = reached(world, ctx)
        if (account === undefined) return notFound(`business account ${ctx.params["account"]}`)
        const denied = ctx.requireWrite()
        if (denied !== undefined) return denied
        const body = isRecord(ctx.body) ? ctx.body : {}
        const name = text(body["name"])
        const language = text(body["language"])
        const category = body["category"]
        if (name === null || !/^[a-z0-9_]{1,512}$/.test(name) || language === null || text(body["body_text"]) === null) {
          return invalid("name (a-z, 0-9, _), language and body_text are required")
        }
        if (category !== "MARKETING" && category !== "UTILITY" && category !== "AUTHENTICATION") {
          return invalid("category must be MARKETING, UTILITY or AUTHENTICATION")
        }
        if (body["header_text"] !== undefined && body["header_media"] !== undefined) return invalid("one header: header_text or header_media")
        if (world.templates.some((t) => t.account_id === account.id && t.name === name && t.language === language)) {
          return refuse(409, "template_exists", `A template ${name} in ${language} exists.`)
        }
        ctx.countWrite()
        const template: Template = {
          id: `ca_tpl_${account.id.slice(-4)}_${world.templates.filter((t) => t.account_id === account.id).length + 1}`,
          account_id: account.id,
          name,
          language,
          status: "PENDING",
          category
        }
        world.templates.push(template)
        return ok(template)
      }
    },
    {
      method: "GET",
      path: "/v1/accounts/:account/template_analytics",
      handler: (world, ctx) => {
        const account = reached(world, ctx)
        return account === undefined ? notFound(`business account ${ctx.params["account"]}`) : analytics(world, account, ctx)
      }
    },
    {
      method: "GET",
      path: "/v1/accounts/:account/dataset",
      handler: (world, ctx) => {
        const account = reached(world, ctx)
        const dataset = account === undefined ? undefined : world.datasets.find((d) => d.account_id === account.id)
        return dataset === undefined ? notFound(`dataset of ${ctx.params["account"]}`) : ok(dataset)
      }
    },
    {
      method: "POST",
      path: "/v1/accounts/:account/dataset",
      handler: (world, ctx) => {
        const account = reached(world, ctx)
        if (account === undefined) return notFound(`business account ${ctx.params["account"]}`)
        const denied = ctx.requireWrite()
        if (denied !== undefined) return denied
        // A business account has at most one dataset: creating again answers the existing one.
        const existing = world.datasets.find((d) => d.account_id === account.id)
        if (existing !== undefined) return ok(existing)
        const created: ChatDataset = { id: `ca_ds_${account.id.slice(-4)}`, account_id: account.id, name: `${account.name} dataset` }
        world.datasets.push(created)
        ctx.countWrite()
        return ok(created)
      }
    },
    {
      // Conversions from chats: only `business_messaging` events carrying the ad's click id count.
      method: "POST",
      path: "/v1/datasets/:dataset/events",
      handler: (world, ctx) => {
        const id = ctx.params["dataset"] ?? ""
        const dataset = world.datasets.find((d) => d.id === id)
        if (dataset === undefined || !ctx.reaches(dataset.account_id)) return notFound(`dataset ${id}`)
        const denied = ctx.requireWrite()
        if (denied !== undefined) return denied
        const data = isRecord(ctx.body) ? ctx.body["data"] : undefined
        if (!Array.isArray(data) || data.length === 0 || data.length > 1_000) return invalid("data must be an array of 1 to 1000 events")
        for (const event of data) {
          if (!isRecord(event) || typeof event["event_name"] !== "string" || typeof event["event_time"] !== "number") {
            return invalid("each event needs event_name (string) and event_time (unix seconds)")
          }
          if (event["action_source"] !== "business_messaging" || event["messaging_channel"] !== "chat_app_a") {
            return invalid("events need action_source business_messaging and messaging_channel chat_app_a")
          }
          if (!isRecord(event["user_data"]) || text(event["user_data"]["ctwa_clid"]) === null) {
            return invalid("user_data.ctwa_clid is required")
          }
        }
        const receivedAt = new Date(ctx.nowMs).toISOString()
        for (const event of data) {
          if (isRecord(event)) world.receivedEvents.push({ dataset_id: id, account_id: dataset.account_id, received_at: receivedAt, ...event })
        }
        if (world.receivedEvents.length > KEPT_EVENTS) world.receivedEvents.splice(0, world.receivedEvents.length - KEPT_EVENTS)
        ctx.countWrite()
        return ok({ events_received: data.length })
      }
    },
    { method: "POST", path: "/v1/phone_numbers/:phone/messages", handler: send },
    ...conversationRoutes<ChatWorld>()
  ],
  state: (world) => ({
    business_accounts: world.accounts,
    templates: world.templates,
    conversations: world.store.conversations,
    messages: world.store.messages,
    datasets: world.datasets,
    received_events: world.receivedEvents
  }),
  patch: (world, change) => {
    // The fields a test moves by hand must keep values the platform itself would show.
    if ("insights" in change && !["off", "enabling", "on"].includes(String(change["insights"]))) {
      return invalid("insights must be off, enabling or on")
    }
    if ("status" in change && world.templates.some((t) => t.id === change.id) && !TEMPLATE_STATUSES.includes(String(change["status"]))) {
      return invalid(`a template's status is one of ${TEMPLATE_STATUSES.join(", ")}`)
    }
    const delay = change["insights_delay_seconds"]
    if (delay !== undefined && (typeof delay !== "number" || !Number.isInteger(delay) || delay < 0 || delay > 86_400)) {
      return invalid("insights_delay_seconds must be an integer from 0 to 86400")
    }
    return patchIn(
      [world.accounts, world.templates, world.store.conversations, world.store.messages, world.datasets],
      change,
      ["account_id", "conversation_id"]
    )
  },
  arrive: (world, arrival, ctx) => {
    if (arrival["kind"] === "status") return statusArrival(world.store, arrival, ctx, (message) => payload(world, message))
    if (arrival["kind"] !== "message") return invalid("arrive.kind must be message or status")
    const phoneId = text(arrival["phone_number_id"])
    const account = phoneId !== null
      ? phoneOf(world, phoneId)?.account
      : world.accounts.find((a) => a.id === (text(arrival["account_id"]) ?? world.accounts[0]?.id))
    if (account === undefined) return notFound("business account or phone number")
    const from = text(arrival["from"])
    const words = text(arrival["text"])
    if (from === null || words === null) return invalid("arrive needs from and text")
    const referral = parseReferral(arrival["referral"], true)
    if (referral === "invalid") return invalid("referral needs ad_id")
    const message = world.store.record({
      account_id: account.id, direction: "inbound", from, to: account.phone_numbers[0]?.display_phone_number ?? "", type: "text",
      text: words, template: null, referral, status: "received", contactId: from, contactName: text(arrival["name"]) ?? from,
      at: new Date(ctx.nowMs).toISOString()
    })
    ctx.push(account.id, payload(world, message))
    return ok({ message_id: message.id, conversation_id: message.conversation_id })
  },
  grantDeath: grantDeathPayload("chat_app_a", "chat_app_a_business_account")
})
