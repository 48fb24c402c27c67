/**
 * `chat_app_a`, the business-chat platform: business accounts with phone numbers, message
 * templates with daily analytics (switched on per account by the first analytics call, which
 * answers 409 `insights_enabling` until they are ready, as the real platform does), conversations
 * and messages on the shared model (text or template sends, inbound arrivals carrying the
 * click-to-chat referral with `ctwa_clid`), and the business account's dataset.
 */
import {
  fail,
  forbidden,
  hashInt,
  invalid,
  isRecord,
  notFound,
  ok,
  page,
  patchObjects,
  personaAccountCount,
  str,
  type World,
  type WorldOutcome,
  type WorldPush,
  type WorldRequest
} from "./kit.ts"
import { conversationRoutes, makeMessagingStore, type Message, parseReferral, statusArrival } from "./messaging.ts"

const WRITE_SCOPE = "business_messaging"
const READ_SCOPE = "business_management"

interface BusinessAccount {
  id: string
  name: string
  currency: string
  timezone: string
  /** `off` until the first analytics call, then `enabling` for `insights_delay_seconds`, then `on`. */
  insights: "off" | "enabling" | "on"
  insights_ready_at: string | null
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

const DAY_MS = 86_400_000
const isDate = (value: string | null): value is string => value !== null && /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(value))

export const chatAppAWorld = (): World => {
  const store = makeMessagingStore("ca")
  const accounts: Array<BusinessAccount> = [1, 2, 3].map((n) => ({
    id: `ca_waba_000${n}`,
    name: `Sandbox Business ${n}`,
    currency: n === 2 ? "USD" : "EUR",
    timezone: "UTC",
    insights: "off",
    insights_ready_at: null,
    insights_delay_seconds: 1,
    phone_numbers: [{ id: `ca_phone_000${n}`, display_phone_number: `+35191000000${n}`, verified_name: `Sandbox Business ${n}` }]
  }))
  const templates: Array<Template> = accounts.flatMap((account) =>
    [
      { name: "welcome", category: "MARKETING" as const, status: "APPROVED" as const },
      { name: "order_update", category: "UTILITY" as const, status: "APPROVED" as const },
      { name: "spring_promo", category: "MARKETING" as const, status: "PENDING" as const }
    ].map((t, i) => ({ id: `ca_tpl_${account.id.slice(-4)}_${i + 1}`, account_id: account.id, language: "en_US", ...t }))
  )
  const datasets: Array<ChatDataset> = []
  for (const account of accounts) {
    const phone = account.phone_numbers[0]
    if (phone !== undefined) store.seed(account.id, phone.display_phone_number, "ad_", true)
  }
  let writeCount = 0

  const phoneOf = (phoneId: string) => {
    for (const account of accounts) {
      const phone = account.phone_numbers.find((p) => p.id === phoneId)
      if (phone !== undefined) return { account, phone }
    }
    return undefined
  }

  /** The platform's webhook: `{object, entry: [{id: <business account>, changes: [{field: "messages", value}]}]}`. */
  const push = (message: Message): WorldPush => {
    const account = accounts.find((a) => a.id === message.account_id)
    const phone = account?.phone_numbers[0]
    const conversation = store.conversations.find((c) => c.id === message.conversation_id)
    const timestamp = String(Math.floor(Date.parse(message.created_at) / 1000))
    const value = message.direction === "inbound"
      ? {
        messaging_product: "chat_app_a",
        metadata: { display_phone_number: phone?.display_phone_number ?? "", phone_number_id: phone?.id ?? "" },
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
        metadata: { display_phone_number: phone?.display_phone_number ?? "", phone_number_id: phone?.id ?? "" },
        statuses: [{ id: message.id, status: message.status, timestamp, recipient_id: message.to }]
      }
    return {
      accountId: message.account_id,
      body: { object: "chat_app_a_business_account", entry: [{ id: message.account_id, changes: [{ field: "messages", value }] }] }
    }
  }

  /** Seeded daily figures per template: the same range always answers the same numbers. */
  const analytics = (account: BusinessAccount, request: WorldRequest): WorldOutcome => {
    const since = request.query.get("since")
    const until = request.query.get("until")
    if (!isDate(since) || !isDate(until) || since > until) return invalid("since and until must be YYYY-MM-DD, since <= until")
    const now = Date.now()
    if (account.insights === "off") {
      account.insights = "enabling"
      account.insights_ready_at = new Date(now + account.insights_delay_seconds * 1000).toISOString()
      writeCount++
    }
    if (account.insights === "enabling") {
      const readyAt = Date.parse(account.insights_ready_at ?? new Date(now).toISOString())
      if (now < readyAt) {
        const retry = Math.max(1, Math.ceil((readyAt - now) / 1000))
        return fail(409, "insights_enabling", "template analytics are being switched on for this account", {
          retry_after_seconds: retry
        })
      }
      account.insights = "on"
    }
    const wanted = request.query.get("template_ids")?.split(",").filter((id) => id.length > 0) ?? []
    const chosen = templates.filter((t) => t.account_id === account.id && (wanted.length === 0 || wanted.includes(t.id)))
    const rows: Array<Record<string, unknown>> = []
    for (let day = Date.parse(since); day <= Date.parse(until); day += DAY_MS) {
      const date = new Date(day).toISOString().slice(0, 10)
      for (const template of chosen) {
        if (template.status !== "APPROVED") continue
        const sent = hashInt(`${template.id}:${date}:sent`, 120)
        const delivered = Math.floor(sent * 0.92)
        const read = Math.floor(delivered * 0.7)
        rows.push({
          template_id: template.id,
          date,
          sent,
          delivered,
          read,
          button_clicks: Math.floor(read * 0.2),
          cost_minor: template.category === "MARKETING" ? sent * 5 : sent * 2,
          currency: account.currency
        })
      }
    }
    return page(rows, request.query)
  }

  const sendMessage = (request: WorldRequest, phoneId: string): WorldOutcome => {
    const found = phoneOf(phoneId)
    if (found === undefined || !request.accountIds.includes(found.account.id)) return notFound(`phone number ${phoneId}`)
    if (!request.scopes.includes(WRITE_SCOPE)) return forbidden(WRITE_SCOPE)
    const body = isRecord(request.body) ? request.body : {}
    const to = str(body["to"])
    if (to === null) return invalid("to is required")
    const type = body["type"] ?? "text"
    let text: string | null = null
    let template: { name: string; language: string } | null = null
    if (type === "text") {
      text = isRecord(body["text"]) ? str(body["text"]["body"]) : null
      if (text === null) return invalid("text.body is required")
    } else if (type === "template") {
      const requested = isRecord(body["template"]) ? body["template"] : {}
      const name = str(requested["name"])
      const language = str(requested["language"]) ?? "en_US"
      const known = templates.find((t) => t.account_id === found.account.id && t.name === name && t.language === language)
      if (known === undefined) return fail(404, "template_not_found", `no template ${String(name)} in ${language}`)
      if (known.status !== "APPROVED") return fail(400, "template_not_approved", `template ${known.name} is ${known.status}`)
      template = { name: known.name, language }
    } else {
      return invalid("type must be text or template")
    }
    const contactName = store.conversations.find((c) => c.account_id === found.account.id && c.contact_id === to)?.contact_name ?? to
    const message = store.record({
      account_id: found.account.id, direction: "outbound", from: found.phone.display_phone_number, to, type, text,
      template, referral: null, status: "sent", contactId: to, contactName
    })
    writeCount++
    return ok({ id: message.id, conversation_id: message.conversation_id })
  }

  const handle = (request: WorldRequest): WorldOutcome | null => {
    const owns = (id: string) => request.accountIds.includes(id)
    const [first, id, sub] = request.path
    if (first === "accounts" && id !== undefined) {
      const account = accounts.find((a) => a.id === id)
      if (account === undefined || !owns(id)) return notFound(`business account ${id}`)
      if (request.method === "GET" && sub === undefined) return ok(account)
      if (request.method === "GET" && sub === "phone_numbers") return page(account.phone_numbers, request.query)
      if (request.method === "GET" && sub === "templates") {
        return page(templates.filter((t) => t.account_id === id), request.query)
      }
      if (request.method === "GET" && sub === "template_analytics") return analytics(account, request)
      if (sub === "dataset") {
        const existing = datasets.find((d) => d.account_id === id)
        if (request.method === "GET") return existing === undefined ? notFound(`dataset of ${id}`) : ok(existing)
        if (request.method === "POST") {
          if (!request.scopes.includes(WRITE_SCOPE)) return forbidden(WRITE_SCOPE)
          // Creating is idempotent: the business account has at most one dataset.
          if (existing !== undefined) return ok(existing)
          const created: ChatDataset = { id: `ca_ds_${id.slice(-4)}`, account_id: id, name: `${account.name} dataset` }
          datasets.push(created)
          writeCount++
          return ok(created)
        }
      }
    }
    if (request.method === "POST" && first === "phone_numbers" && id !== undefined && sub === "messages") {
      return sendMessage(request, id)
    }
    return conversationRoutes(store, request, owns)
  }

  const arrive = (body: Record<string, unknown>): WorldOutcome => {
    if (body["kind"] === "status") return statusArrival(store, body, push)
    if (body["kind"] !== "message") return invalid("arrive.kind must be message or status")
    const phoneId = str(body["phone_number_id"])
    const account = phoneId !== null ? phoneOf(phoneId)?.account : accounts.find((a) => a.id === (str(body["account_id"]) ?? accounts[0]?.id))
    if (account === undefined) return notFound("business account or phone number")
    const from = str(body["from"])
    const text = str(body["text"])
    if (from === null || text === null) return invalid("arrive needs from and text")
    const referral = parseReferral(body["referral"], true)
    if (referral === "invalid") return invalid("referral needs ad_id")
    const message = store.record({
      account_id: account.id, direction: "inbound", from, to: account.phone_numbers[0]?.display_phone_number ?? "",
      type: "text", text, template: null, referral, status: "received", contactId: from, contactName: str(body["name"]) ?? from
    })
    return ok({ message_id: message.id, conversation_id: message.conversation_id }, [push(message)])
  }

  return {
    accounts: (persona) =>
      accounts.slice(0, personaAccountCount(persona)).map((a) => ({
        id: a.id, name: a.name, currency: a.currency, timezone: a.timezone
      })),
    scopes: (persona) => persona === "no_manage_ads_permission" ? [READ_SCOPE] : [READ_SCOPE, WRITE_SCOPE],
    writeScope: WRITE_SCOPE,
    handle,
    state: () => ({
      business_accounts: accounts,
      templates,
      conversations: store.conversations,
      messages: store.messages,
      datasets,
      write_count: writeCount
    }),
    patch: (body) => {
      if (isRecord(body) && isRecord(body["arrive"])) return arrive(body["arrive"])
      return patchObjects([accounts, templates, store.conversations, store.messages, datasets], body).outcome
    }
  }
}
