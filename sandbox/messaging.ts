/**
 * The conversation and message model the four messaging kinds share (`chat_app_a`, `social_dm`,
 * `page_messenger`, `short_video_messaging`): conversations with one contact each, messages in
 * both directions with an optional ad referral on inbound ones, delivery statuses. Each kind
 * differs in its account fields and in the shape of the callback it pushes; this file holds the
 * three alike kinds whole and the pieces `chat_app_a` (chat-app-a.ts) builds on.
 *
 * `_state`: `{accounts: [{id, name, username, login_type?, page_id?}], conversations: [{id,
 * account_id, contact_id, contact_name, updated_at}], messages: [{id, conversation_id, account_id,
 * direction, from, to, type, text, template, referral, status, created_at}], write_count}`.
 * Arrivals: `{kind: "message", account_id?, from, name?, text, referral?: {ad_id, source?, ref?,
 * headline?}}` and `{kind: "status", message_id, status: "delivered" | "read" | "failed"}`.
 */
import type { ProviderKind } from "../src/connections/providers/registry.ts"
import {
  type ApiContext,
  defineSandbox,
  hashOf,
  invalid,
  notFound,
  ok,
  paged,
  type PushContext,
  refuse,
  type SandboxReply,
  type SandboxRoute,
  seededRandom
} from "./kind.ts"

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const text = (value: unknown): string | null => (typeof value === "string" && value.length > 0 ? value : null)

/**
 * `PATCH _state {objects}` for the kinds here: the fields given are set on whichever object
 * carries the id, as the provider's UI would change it; ids and ownership fields stay.
 */
export const patchIn = (
  collections: ReadonlyArray<ReadonlyArray<{ id: string } & Record<string, unknown>>>,
  object: Readonly<Record<string, unknown>> & { readonly id: string },
  fixed: ReadonlyArray<string> = []
): SandboxReply | undefined => {
  const target = collections.flatMap((items) => items).find((item) => item.id === object.id)
  if (target === undefined) return notFound(`object ${object.id}`)
  for (const [key, value] of Object.entries(object)) {
    if (key !== "id" && !fixed.includes(key)) target[key] = value
  }
  return undefined
}

/** Readable ids, stable for a given sequence of writes. */
export const idMaker = () => {
  const counters = new Map<string, number>()
  return (prefix: string) => {
    const next = (counters.get(prefix) ?? 0) + 1
    counters.set(prefix, next)
    return `${prefix}_${String(next).padStart(4, "0")}`
  }
}

export interface Referral {
  readonly ad_id: string
  readonly source: string
  readonly ctwa_clid?: string
  readonly ref?: string
  readonly headline?: string
}

export interface Conversation {
  id: string
  account_id: string
  contact_id: string
  contact_name: string
  updated_at: string
  [field: string]: unknown
}

export type MessageStatus = "received" | "sent" | "delivered" | "read" | "failed"

interface MessageFields {
  account_id: string
  direction: "inbound" | "outbound"
  from: string
  to: string
  type: "text" | "template"
  text: string | null
  template: { name: string; language: string } | null
  referral: Referral | null
  status: MessageStatus
}

export interface Message extends MessageFields {
  id: string
  conversation_id: string
  created_at: string
  [field: string]: unknown
}

const FIRST_NAMES = ["Ana", "Ben", "Chloe", "Dev", "Ema", "Farid", "Gia", "Hugo", "Ines", "Jon"]
const GREETINGS = ["Hi, is this still available?", "What are your opening hours?", "I saw your ad", "Can I book for Friday?"]
/**
 * The click-to-chat ads of the ad-platform sandbox (campaign "Chat Leads" of `act_1001`, "Chat
 * Berlin" of `act_1002`) that started the seeded conversations of the first, second and third
 * account: referrals resolve to ads a sync knows.
 */
export const SEEDED_REFERRAL_ADS = ["ad_1001_2_1_1", "ad_1002_2_1_1", "ad_1001_2_2_1"] as const

/** Seeded conversations happened on this morning, so every start shows the same history. */
const SEED_TIME = Date.UTC(2026, 0, 5, 9, 0, 0)

/** Conversations and messages of one world. */
export const makeMessagingStore = (prefix: string) => {
  const nextId = idMaker()
  const conversations: Array<Conversation> = []
  const messages: Array<Message> = []

  const conversationWith = (accountId: string, contactId: string, contactName: string, at: string) => {
    const existing = conversations.find((c) => c.account_id === accountId && c.contact_id === contactId)
    if (existing !== undefined) {
      existing.updated_at = at
      return existing
    }
    const created: Conversation = {
      id: nextId(`${prefix}_conv`),
      account_id: accountId,
      contact_id: contactId,
      contact_name: contactName,
      updated_at: at
    }
    conversations.push(created)
    return created
  }

  const record = (fields: MessageFields & { readonly contactId: string; readonly contactName: string; readonly at: string }) => {
    const conversation = conversationWith(fields.account_id, fields.contactId, fields.contactName, fields.at)
    const message: Message = {
      id: nextId(`${prefix}_msg`),
      conversation_id: conversation.id,
      account_id: fields.account_id,
      direction: fields.direction,
      from: fields.from,
      to: fields.to,
      type: fields.type,
      text: fields.text,
      template: fields.template,
      referral: fields.referral,
      status: fields.status,
      created_at: fields.at
    }
    messages.push(message)
    return message
  }

  /** Two seeded conversations per account, the first started from the click-to-chat ad `adId`. */
  const seed = (accountId: string, address: string, adId: string, withClid: boolean) => {
    const random = seededRandom(hashOf(`${prefix}:${accountId}`))
    for (let c = 0; c < 2; c++) {
      const name = FIRST_NAMES[Math.floor(random() * FIRST_NAMES.length)] ?? "Ana"
      const contactId = `${prefix}_contact_${accountId.slice(-4)}_${c + 1}`
      const at = (minutes: number) => new Date(SEED_TIME + (c * 60 + minutes) * 60_000).toISOString()
      const referral: Referral | null = c === 0
        ? {
          ad_id: adId,
          source: "ad",
          ...(withClid ? { ctwa_clid: `clid_${accountId.slice(-4)}_${c + 1}` } : {}),
          headline: "Message us"
        }
        : null
      record({
        account_id: accountId, direction: "inbound", from: contactId, to: address, type: "text",
        text: GREETINGS[Math.floor(random() * GREETINGS.length)] ?? "Hi", template: null, referral,
        status: "received", contactId, contactName: name, at: at(0)
      })
      record({
        account_id: accountId, direction: "outbound", from: address, to: contactId, type: "text",
        text: "Thanks for your message, we'll be right with you.", template: null, referral: null,
        status: "read", contactId, contactName: name, at: at(2)
      })
    }
  }

  return { conversations, messages, record, seed }
}

export type MessagingStore = ReturnType<typeof makeMessagingStore>

/** How long after a person's last message the business may answer in free text (the platforms' customer-service window). */
export const SERVICE_WINDOW_MS = 24 * 3_600_000

/**
 * Whether the business may send free text to `contactId` now: only within the service window
 * of the person's last message (outside it `chat_app_a` needs a template; the others cannot).
 */
export const freeTextRefusal = (store: MessagingStore, accountId: string, contactId: string, nowMs: number): SandboxReply | undefined => {
  const lastInbound = store.messages.findLast((m) => m.account_id === accountId && m.direction === "inbound" && m.from === contactId)
  if (lastInbound === undefined) return refuse(400, "recipient_unavailable", "This person has not messaged the account.")
  if (nowMs - Date.parse(lastInbound.created_at) > SERVICE_WINDOW_MS) {
    return refuse(400, "outside_service_window", "The person's last message is more than 24 hours old.")
  }
  return undefined
}

/** The reads every messaging kind answers alike. */
export const conversationRoutes = <W extends { readonly store: MessagingStore }>(): ReadonlyArray<SandboxRoute<W>> => [
  {
    method: "GET",
    path: "/v1/accounts/:account/conversations",
    handler: (world, ctx) => {
      const account = ctx.params["account"] ?? ""
      if (!ctx.reaches(account)) return notFound(`account ${account}`)
      return paged(
        world.store.conversations.filter((c) => c.account_id === account).toSorted((a, b) => b.updated_at.localeCompare(a.updated_at)),
        ctx.query
      )
    }
  },
  {
    method: "GET",
    path: "/v1/conversations/:conversation/messages",
    handler: (world, ctx) => {
      const id = ctx.params["conversation"] ?? ""
      const conversation = world.store.conversations.find((c) => c.id === id)
      if (conversation === undefined || !ctx.reaches(conversation.account_id)) return notFound(`conversation ${id}`)
      return paged(world.store.messages.filter((m) => m.conversation_id === id), ctx.query)
    }
  },
  {
    method: "GET",
    path: "/v1/messages/:message",
    handler: (world, ctx) => {
      const id = ctx.params["message"] ?? ""
      const message = world.store.messages.find((m) => m.id === id)
      return message === undefined || !ctx.reaches(message.account_id) ? notFound(`message ${id}`) : ok(message)
    }
  }
]

/** `{arrive: {kind: "status", message_id, status}}`: a receipt for a message the business sent. */
export const statusArrival = (
  store: MessagingStore,
  arrival: Readonly<Record<string, unknown>>,
  ctx: PushContext,
  payload: (message: Message) => unknown
): SandboxReply => {
  const message = store.messages.find((m) => m.id === arrival["message_id"])
  if (message === undefined || message.direction !== "outbound") return notFound(`outbound message ${String(arrival["message_id"])}`)
  const status = arrival["status"]
  if (status !== "delivered" && status !== "read" && status !== "failed" && status !== "sent") {
    return invalid("status must be sent, delivered, read or failed")
  }
  message.status = status
  ctx.push(message.account_id, payload(message))
  return ok({ message_id: message.id, status })
}

export const parseReferral = (value: unknown, withClid: boolean): Referral | null | "invalid" => {
  if (value === undefined || value === null) return null
  if (!isRecord(value) || text(value["ad_id"]) === null) return "invalid"
  const ctwa = text(value["ctwa_clid"])
  const ref = text(value["ref"])
  const headline = text(value["headline"])
  return {
    ad_id: String(value["ad_id"]),
    source: text(value["source"]) ?? "ad",
    ...(withClid && ctwa !== null ? { ctwa_clid: ctwa } : {}),
    ...(ref !== null ? { ref } : {}),
    ...(headline !== null ? { headline } : {})
  }
}

// ---- social_dm, page_messenger, short_video_messaging ----------------------------------------

type PlainKind = "social_dm" | "page_messenger" | "short_video_messaging"

const PLAIN: Record<PlainKind, { readonly prefix: string; readonly object: string; readonly read: string; readonly write: string }> = {
  social_dm: { prefix: "sdm", object: "instagram", read: "dm_basic", write: "dm_manage_messages" },
  page_messenger: { prefix: "pm", object: "page", read: "pages_read_engagement", write: "pages_messaging" },
  short_video_messaging: { prefix: "svm", object: "short_video", read: "dm.read", write: "dm.write" }
}

interface PlainAccount {
  id: string
  name: string
  username: string
  [field: string]: unknown
}

interface PlainWorld {
  readonly accounts: Array<PlainAccount>
  readonly store: MessagingStore
}

/**
 * What a message or receipt pushes: the page and social kinds the ad platform family's
 * `{object, entry: [{id, time, messaging: [...]}]}`, the short-video kind flat events.
 */
const plainPayload = (kind: PlainKind, message: Message): unknown => {
  const timestamp = Date.parse(message.created_at)
  if (kind === "short_video_messaging") {
    return {
      event: message.direction === "inbound" ? "message.received" : "message.status",
      event_id: `${message.id}:${message.status}`,
      account_id: message.account_id,
      timestamp: Math.floor(Date.now() / 1000),
      data: {
        conversation_id: message.conversation_id,
        message_id: message.id,
        from: message.from,
        to: message.to,
        text: message.text,
        status: message.status,
        referral: message.referral
      }
    }
  }
  const event = message.direction === "inbound"
    ? {
      sender: { id: message.from },
      recipient: { id: message.to },
      timestamp,
      message: { mid: message.id, text: message.text },
      ...(message.referral !== null
        ? { referral: { ad_id: message.referral.ad_id, source: "ADS", type: "OPEN_THREAD", ref: message.referral.ref ?? null } }
        : {})
    }
    : {
      sender: { id: message.to },
      recipient: { id: message.from },
      timestamp: Date.now(),
      [message.status === "read" ? "read" : "delivery"]: { mids: [message.id], watermark: Date.now(), status: message.status }
    }
  return { object: PLAIN[kind].object, entry: [{ id: message.account_id, time: Date.now(), messaging: [event] }] }
}

/** The grant-death callback: the ad platform family's `deauthorize` change, or a flat `grant_revoked` event. */
export const grantDeathPayload = (provider: ProviderKind, object: string | null) =>
(accountId: string, userId: string, nowSeconds: number): unknown =>
  object === null
    ? { event: "grant_revoked", event_id: `revoked:${provider}:${accountId}:${userId}:${nowSeconds}`, account_id: accountId, user_id: userId, time: nowSeconds }
    : { object, entry: [{ id: accountId, time: nowSeconds, changes: [{ field: "deauthorize", value: { user_id: userId } }] }] }

/**
 * `social_dm` accounts carry `login_type` (`business_login` first, `page_login` second) and the
 * page they belong to: the service refuses datasets on the wrong login (issue 20), so a
 * `two_accounts` consent reaches both.
 */
const plainSandbox = (kind: PlainKind) => {
  const { object, prefix, read, write } = PLAIN[kind]
  const send = (world: PlainWorld, ctx: ApiContext): SandboxReply => {
    const account = ctx.params["account"] ?? ""
    if (!ctx.reaches(account)) return notFound(`account ${account}`)
    const denied = ctx.requireWrite()
    if (denied !== undefined) return denied
    const body = isRecord(ctx.body) ? ctx.body : {}
    const recipient = text(body["recipient_id"])
    const words = text(body["text"])
    if (recipient === null || words === null) return invalid("recipient_id and text are required")
    // The real platforms only let a business answer someone who wrote, and only for a while.
    const refused = freeTextRefusal(world.store, account, recipient, ctx.nowMs)
    if (refused !== undefined) return refused
    const contactName = world.store.conversations.find((c) => c.account_id === account && c.contact_id === recipient)?.contact_name ?? recipient
    const message = world.store.record({
      account_id: account, direction: "outbound", from: account, to: recipient, type: "text", text: words, template: null,
      referral: null, status: "sent", contactId: recipient, contactName, at: new Date(ctx.nowMs).toISOString()
    })
    ctx.countWrite()
    return ok({ id: message.id, conversation_id: message.conversation_id })
  }

  return defineSandbox<PlainWorld>({
    provider: kind,
    seed: () => {
      const store = makeMessagingStore(prefix)
      const accounts: Array<PlainAccount> = [1, 2, 3].map((n) => ({
        id: `${prefix}_acct_000${n}`,
        name: `Sandbox ${kind} account ${n}`,
        username: `sandbox_${prefix}_${n}`,
        ...(kind === "social_dm" ? { login_type: n === 2 ? "page_login" : "business_login", page_id: `pm_acct_000${n}` } : {})
      }))
      accounts.forEach((account, i) => store.seed(account.id, account.id, SEEDED_REFERRAL_ADS[i] ?? "", false))
      return { accounts, store }
    },
    accounts: (world) => world.accounts.map((a) => ({ id: a.id, name: a.name, currency: null, timezone: "UTC" })),
    readScopes: [read],
    writeScope: write,
    routes: [
      {
        method: "GET",
        path: "/v1/accounts/:account",
        handler: (world, ctx) => {
          const id = ctx.params["account"] ?? ""
          const account = world.accounts.find((a) => a.id === id)
          return account === undefined || !ctx.reaches(id) ? notFound(`account ${id}`) : ok(account)
        }
      },
      { method: "POST", path: "/v1/accounts/:account/messages", handler: send },
      ...conversationRoutes<PlainWorld>()
    ],
    state: (world) => ({ accounts: world.accounts, conversations: world.store.conversations, messages: world.store.messages }),
    patch: (world, change) => patchIn([world.accounts, world.store.conversations, world.store.messages], change, ["account_id", "conversation_id"]),
    arrive: (world, arrival, ctx) => {
      if (arrival["kind"] === "status") return statusArrival(world.store, arrival, ctx, (message) => plainPayload(kind, message))
      if (arrival["kind"] !== "message") return invalid("arrive.kind must be message or status")
      const accountId = text(arrival["account_id"]) ?? world.accounts[0]?.id ?? ""
      if (!world.accounts.some((a) => a.id === accountId)) return notFound(`account ${accountId}`)
      const from = text(arrival["from"])
      const words = text(arrival["text"])
      if (from === null || words === null) return invalid("arrive needs from and text")
      const referral = parseReferral(arrival["referral"], false)
      if (referral === "invalid") return invalid("referral needs ad_id")
      const message = world.store.record({
        account_id: accountId, direction: "inbound", from, to: accountId, type: "text", text: words, template: null, referral,
        status: "received", contactId: from, contactName: text(arrival["name"]) ?? from, at: new Date(ctx.nowMs).toISOString()
      })
      ctx.push(accountId, plainPayload(kind, message))
      return ok({ message_id: message.id, conversation_id: message.conversation_id })
    },
    grantDeath: grantDeathPayload(kind, kind === "short_video_messaging" ? null : object)
  })
}

export const socialDmSandbox = plainSandbox("social_dm")
export const pageMessengerSandbox = plainSandbox("page_messenger")
export const shortVideoMessagingSandbox = plainSandbox("short_video_messaging")
