/**
 * The conversation and message model the four messaging kinds share (`chat_app_a`, `social_dm`,
 * `page_messenger`, `short_video_messaging`): accounts, conversations with one contact each,
 * messages in both directions with an optional ad referral on inbound ones, delivery statuses.
 * Each kind differs in its account fields and in the shape of the callback it pushes; this file
 * holds the three alike kinds whole and the store `chat_app_a` builds on.
 */
import {
  fail,
  forbidden,
  idMaker,
  invalid,
  isRecord,
  notFound,
  ok,
  page,
  patchObjects,
  personaAccountCount,
  seeded,
  str,
  unixSeconds,
  type World,
  type WorldOutcome,
  type WorldPush,
  type WorldRequest
} from "./kit.ts"

export type MessagingKind = "chat_app_a" | "social_dm" | "page_messenger" | "short_video_messaging"

export interface Referral {
  /** The ad the person clicked to start the chat. */
  readonly ad_id: string
  readonly source: string
  /** `chat_app_a`: the click id the ad platform attributes by. */
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

export interface MessagingAccount {
  id: string
  name: string
  [field: string]: unknown
}

const FIRST_NAMES = ["Ana", "Ben", "Chloe", "Dev", "Ema", "Farid", "Gia", "Hugo", "Ines", "Jon"]
const GREETINGS = ["Hi, is this still available?", "What are your opening hours?", "I saw your ad", "Can I book for Friday?"]
const BASE_TIME = Date.UTC(2026, 0, 5, 9, 0, 0)

/** Conversations and messages of one world; ids are stable for a given sequence of writes. */
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

  const record = (fields: MessageFields & {
    readonly contactId: string
    readonly contactName: string
    readonly at?: string
  }): Message => {
    const at = fields.at ?? new Date().toISOString()
    const conversation = conversationWith(fields.account_id, fields.contactId, fields.contactName, at)
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
      created_at: at
    }
    messages.push(message)
    return message
  }

  /** Two seeded conversations per account, the first started from a click-to-chat ad. */
  const seed = (accountId: string, address: string, adPrefix: string, withClid: boolean) => {
    const random = seeded(`${prefix}:${accountId}`)
    for (let c = 0; c < 2; c++) {
      const name = FIRST_NAMES[Math.floor(random() * FIRST_NAMES.length)] ?? "Ana"
      const contactId = `${prefix}_contact_${accountId.slice(-4)}_${c + 1}`
      const at = (minutes: number) => new Date(BASE_TIME + (c * 60 + minutes) * 60_000).toISOString()
      const referral: Referral | null = c === 0
        ? {
          ad_id: `${adPrefix}${1 + Math.floor(random() * 5)}`,
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

  return { conversations, messages, record, seed, nextId }
}

export type MessagingStore = ReturnType<typeof makeMessagingStore>

export const conversationRoutes = (
  store: MessagingStore,
  request: WorldRequest,
  owns: (accountId: string) => boolean
): WorldOutcome | null => {
  const [first, id, sub] = request.path
  if (request.method === "GET" && first === "accounts" && id !== undefined && sub === "conversations") {
    if (!owns(id)) return notFound(`account ${id}`)
    const list = store.conversations.filter((c) => c.account_id === id)
      .toSorted((a, b) => b.updated_at.localeCompare(a.updated_at))
    return page(list, request.query)
  }
  if (request.method === "GET" && first === "conversations" && id !== undefined && sub === "messages") {
    const conversation = store.conversations.find((c) => c.id === id)
    if (conversation === undefined || !owns(conversation.account_id)) return notFound(`conversation ${id}`)
    return page(store.messages.filter((m) => m.conversation_id === id), request.query)
  }
  if (request.method === "GET" && first === "messages" && id !== undefined && sub === undefined) {
    const message = store.messages.find((m) => m.id === id)
    if (message === undefined || !owns(message.account_id)) return notFound(`message ${id}`)
    return ok(message)
  }
  return null
}

/** `{arrive: {kind: "status", message_id, status}}`: a receipt for a message the business sent. */
export const statusArrival = (
  store: MessagingStore,
  arrive: Record<string, unknown>,
  push: (message: Message) => WorldPush
): WorldOutcome => {
  const message = store.messages.find((m) => m.id === arrive["message_id"])
  if (message === undefined || message.direction !== "outbound") return notFound(`outbound message ${String(arrive["message_id"])}`)
  const status = arrive["status"]
  if (status !== "delivered" && status !== "read" && status !== "failed" && status !== "sent") {
    return invalid("status must be sent, delivered, read or failed")
  }
  message.status = status
  return ok({ message_id: message.id, status }, [push(message)])
}

export const parseReferral = (value: unknown, withClid: boolean): Referral | null | "invalid" => {
  if (value === undefined || value === null) return null
  if (!isRecord(value) || str(value["ad_id"]) === null) return "invalid"
  const ctwa = str(value["ctwa_clid"])
  const ref = str(value["ref"])
  const headline = str(value["headline"])
  return {
    ad_id: String(value["ad_id"]),
    source: str(value["source"]) ?? "ad",
    ...(withClid && ctwa !== null ? { ctwa_clid: ctwa } : {}),
    ...(ref !== null ? { ref } : {}),
    ...(headline !== null ? { headline } : {})
  }
}

// ---- social_dm, page_messenger, short_video_messaging ----------------------------------------

type PlainKind = Exclude<MessagingKind, "chat_app_a">

const PLAIN: Record<PlainKind, { readonly prefix: string; readonly object: string; readonly scope: string }> = {
  social_dm: { prefix: "sdm", object: "instagram", scope: "messages_manage" },
  page_messenger: { prefix: "pm", object: "page", scope: "pages_messaging" },
  short_video_messaging: { prefix: "svm", object: "short_video", scope: "dm.write" }
}

/**
 * The callback a message or receipt produces: the page/social kinds push the ad platform family's
 * `{object, entry: [{id, time, messaging: [...]}]}`; the short-video kind pushes flat events.
 */
const plainPush = (kind: PlainKind, object: string, message: Message, account: string): WorldPush => {
  const timestamp = Date.parse(message.created_at)
  if (kind === "short_video_messaging") {
    return {
      accountId: account,
      body: {
        event: message.direction === "inbound" ? "message.received" : "message.status",
        event_id: `${message.id}:${message.status}`,
        account_id: account,
        timestamp: unixSeconds(),
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
  }
  const entry = message.direction === "inbound"
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
      timestamp,
      [message.status === "read" ? "read" : "delivery"]: { mids: [message.id], watermark: timestamp, status: message.status }
    }
  return { accountId: account, body: { object, entry: [{ id: account, time: timestamp, messaging: [entry] }] } }
}

/**
 * `social_dm` accounts carry `login_type` (`business_login` first, `page_login` second): the
 * service refuses the wrong one for datasets (issue 20), so both must be reachable.
 */
export const plainMessagingWorld = (kind: PlainKind): World => {
  const { object, prefix, scope } = PLAIN[kind]
  const store = makeMessagingStore(prefix)
  const accounts: Array<MessagingAccount> = [1, 2, 3].map((n) => ({
    id: `${prefix}_acct_000${n}`,
    name: `Sandbox ${kind} account ${n}`,
    username: `sandbox_${prefix}_${n}`,
    ...(kind === "social_dm" ? { login_type: n === 2 ? "page_login" : "business_login" } : {}),
    ...(kind === "social_dm" ? { page_id: `pm_acct_000${n}` } : {})
  }))
  for (const account of accounts) store.seed(account.id, account.id, "ad_", false)
  let writeCount = 0

  const handle = (request: WorldRequest): WorldOutcome | null => {
    const owns = (id: string) => request.accountIds.includes(id)
    const [first, id, sub] = request.path
    if (request.method === "GET" && first === "accounts" && id !== undefined && sub === undefined) {
      const account = accounts.find((a) => a.id === id)
      return account === undefined || !owns(id) ? notFound(`account ${id}`) : ok(account)
    }
    if (request.method === "POST" && first === "accounts" && id !== undefined && sub === "messages") {
      if (!owns(id)) return notFound(`account ${id}`)
      if (!request.scopes.includes(scope)) return forbidden(scope)
      const body = isRecord(request.body) ? request.body : {}
      const recipient = str(body["recipient_id"])
      const text = str(body["text"])
      if (recipient === null || text === null) return invalid("recipient_id and text are required")
      const known = store.conversations.find((c) => c.account_id === id && c.contact_id === recipient)
      if (known === undefined) return fail(400, "recipient_unavailable", "the person has not messaged this account")
      const message = store.record({
        account_id: id, direction: "outbound", from: id, to: recipient, type: "text", text, template: null,
        referral: null, status: "sent", contactId: recipient, contactName: known.contact_name
      })
      writeCount++
      return ok({ id: message.id, conversation_id: message.conversation_id })
    }
    return conversationRoutes(store, request, owns)
  }

  const arrive = (body: Record<string, unknown>): WorldOutcome => {
    if (body["kind"] === "status") {
      return statusArrival(store, body, (message) => plainPush(kind, object, message, message.account_id))
    }
    if (body["kind"] !== "message") return invalid("arrive.kind must be message or status")
    const accountId = str(body["account_id"]) ?? accounts[0]?.id ?? ""
    if (!accounts.some((a) => a.id === accountId)) return notFound(`account ${accountId}`)
    const from = str(body["from"])
    const text = str(body["text"])
    if (from === null || text === null) return invalid("arrive needs from and text")
    const referral = parseReferral(body["referral"], false)
    if (referral === "invalid") return invalid("referral needs ad_id")
    const message = store.record({
      account_id: accountId, direction: "inbound", from, to: accountId, type: "text", text, template: null,
      referral, status: "received", contactId: from, contactName: str(body["name"]) ?? from
    })
    return ok({ message_id: message.id, conversation_id: message.conversation_id }, [
      plainPush(kind, object, message, accountId)
    ])
  }

  return {
    accounts: (persona) =>
      accounts.slice(0, personaAccountCount(persona)).map((a) => ({ id: a.id, name: a.name, currency: null, timezone: "UTC" })),
    scopes: (persona) => persona === "no_manage_ads_permission" ? [`${scope}.read`] : [`${scope}.read`, scope],
    writeScope: scope,
    handle,
    state: () => ({ accounts, conversations: store.conversations, messages: store.messages, write_count: writeCount }),
    patch: (body) => {
      if (isRecord(body) && isRecord(body["arrive"])) return arrive(body["arrive"])
      return patchObjects([accounts, store.conversations, store.messages], body).outcome
    }
  }
}
