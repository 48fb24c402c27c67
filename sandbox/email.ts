/**
 * `email`, a mail provider's API: mailboxes (each with a `state` a test sets to make sends fail
 * the way real providers refuse them), threads and messages, sending (answers the message and
 * thread ids), inbound mail and RFC 3464 delivery-status reports pushed to the subscriptions.
 *
 * Send refusals by mailbox state (`PATCH _state {objects: [{id: <mailbox>, state}]}`):
 * `suspended` 403 `account_suspended`, `disabled` 403 `mailbox_disabled`, `auth_revoked` 401
 * `invalid_token` (on every call), `quota_exceeded` 403 `quota_exceeded` (a daily quota: not a
 * 429, which clients would retry), `recipient_rejected` 400 `recipient_rejected`; any recipient
 * at `@rejected.example` is refused that way whatever the state.
 *
 * `_state`: `{mailboxes: [{id, address, name, state}], threads: [{id, mailbox_id, subject,
 * updated_at}], messages: [{id, thread_id, mailbox_id, direction, message_id_header, in_reply_to,
 * from, to, subject, text, content_type, delivery_status, created_at}], write_count}`.
 * Arrivals: `{kind: "message", mailbox_id?, thread_id?, from, subject?, text}` and `{kind:
 * "delivery_status", message_id, status: "failed" | "delayed" | "delivered", diagnostic?}`.
 */
import { type ApiContext, defineSandbox, invalid, notFound, ok, paged, refuse, type SandboxReply } from "./kind.ts"
import { grantDeathPayload, idMaker, isRecord, patchIn, text } from "./messaging.ts"

export const MAILBOX_STATES = ["active", "suspended", "disabled", "auth_revoked", "quota_exceeded", "recipient_rejected"] as const
type MailboxState = typeof MAILBOX_STATES[number]

interface Mailbox {
  id: string
  address: string
  name: string
  state: MailboxState
  [field: string]: unknown
}

interface Thread {
  id: string
  mailbox_id: string
  subject: string
  /** `INBOX` once anything arrived in it, `SENT` once the mailbox sent in it, plus user labels. */
  label_ids: Array<string>
  updated_at: string
  [field: string]: unknown
}

interface Label {
  id: string
  mailbox_id: string
  name: string
  type: "system" | "user"
  [field: string]: unknown
}

interface Draft {
  id: string
  mailbox_id: string
  thread_id: string | null
  to: Array<string>
  subject: string
  text: string
  updated_at: string
  [field: string]: unknown
}

interface MailFields {
  mailbox_id: string
  direction: "inbound" | "outbound"
  in_reply_to: string | null
  from: string
  to: Array<string>
  subject: string
  text: string
  content_type: string
  /** Extra header fields the sender set (`List-Unsubscribe`, `List-Unsubscribe-Post`, `X-*`). */
  headers: Record<string, string>
  /** Outbound: `sent`, then `delivered` or `failed` when a report arrives; inbound: `received`. */
  delivery_status: "received" | "sent" | "delivered" | "failed"
  /** Files sent with the text (the message is then `multipart/mixed`). */
  attachments?: Array<SandboxAttachment>
}

interface SandboxAttachment {
  filename: string
  content_type: string
  size: number
  content_base64: string
}

interface MailMessage extends MailFields {
  id: string
  thread_id: string
  /** The RFC 5322 Message-ID, so replies can thread by `In-Reply-To`. */
  message_id_header: string
  created_at: string
  [field: string]: unknown
}

interface MailWorld {
  readonly mailboxes: Array<Mailbox>
  readonly threads: Array<Thread>
  readonly messages: Array<MailMessage>
  readonly labels: Array<Label>
  readonly drafts: Array<Draft>
  readonly nextId: (prefix: string) => string
}

const REFUSALS: Record<Exclude<MailboxState, "active">, readonly [number, string, string]> = {
  suspended: [403, "account_suspended", "The account is suspended."],
  disabled: [403, "mailbox_disabled", "The mailbox is disabled."],
  auth_revoked: [401, "invalid_token", "The grant was revoked."],
  quota_exceeded: [403, "quota_exceeded", "The daily sending quota is used up."],
  recipient_rejected: [400, "recipient_rejected", "The recipient was rejected."]
}

const addressOk = (value: string) => /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(value)
const SEED_TIME = Date.UTC(2026, 0, 5, 9, 0, 0)

/** A multipart/report (RFC 3464) the way a mail server reports a failed delivery. */
const deliveryReport = (original: MailMessage, recipient: string, status: string, diagnostic: string, reporter: string) => {
  const boundary = `report_${original.id}`
  const action = status === "failed" ? "failed" : status === "delayed" ? "delayed" : "delivered"
  const code = action === "failed" ? "5.1.1" : action === "delayed" ? "4.4.1" : "2.0.0"
  const body = [
    `--${boundary}`,
    "Content-Type: text/plain; charset=utf-8",
    "",
    `Delivery to ${recipient} ${action === "failed" ? "failed permanently" : action}.`,
    "",
    `--${boundary}`,
    "Content-Type: message/delivery-status",
    "",
    `Reporting-MTA: dns; ${reporter}`,
    `Original-Envelope-Id: ${original.message_id_header}`,
    "",
    `Final-Recipient: rfc822; ${recipient}`,
    `Action: ${action}`,
    `Status: ${code}`,
    `Diagnostic-Code: smtp; ${diagnostic}`,
    "",
    `--${boundary}`,
    "Content-Type: text/rfc822-headers",
    "",
    `Message-ID: ${original.message_id_header}`,
    `From: ${original.from}`,
    `To: ${original.to.join(", ")}`,
    `Subject: ${original.subject}`,
    "",
    `--${boundary}--`,
    ""
  ].join("\r\n")
  return { contentType: `multipart/report; report-type=delivery-status; boundary="${boundary}"`, body }
}

const record = (world: MailWorld, fields: MailFields & { readonly threadId: string | null; readonly at: string }): MailMessage => {
  const known = fields.threadId === null ? undefined : world.threads.find((t) => t.id === fields.threadId)
  const thread: Thread = known ??
    { id: world.nextId("em_thr"), mailbox_id: fields.mailbox_id, subject: fields.subject, label_ids: [], updated_at: fields.at }
  if (known === undefined) world.threads.push(thread)
  thread.updated_at = fields.at
  const label = fields.direction === "inbound" ? "INBOX" : "SENT"
  if (!thread.label_ids.includes(label)) thread.label_ids.push(label)
  const id = world.nextId("em_msg")
  const message: MailMessage = {
    id,
    thread_id: thread.id,
    mailbox_id: fields.mailbox_id,
    direction: fields.direction,
    message_id_header: `<${id}@sandbox-mail.example>`,
    in_reply_to: fields.in_reply_to,
    from: fields.from,
    to: fields.to,
    subject: fields.subject,
    text: fields.text,
    content_type: fields.content_type,
    headers: fields.headers,
    delivery_status: fields.delivery_status,
    ...(fields.attachments === undefined || fields.attachments.length === 0 ? {} : { attachments: fields.attachments }),
    created_at: fields.at
  }
  world.messages.push(message)
  return message
}

/** What the provider pushes for a message that arrived in a mailbox (a bounce included). */
const payload = (message: MailMessage): unknown => ({
  event: "message.received",
  event_id: `evt_${message.id}`,
  account_id: message.mailbox_id,
  mailbox_id: message.mailbox_id,
  timestamp: Math.floor(Date.now() / 1000),
  message: {
    id: message.id,
    thread_id: message.thread_id,
    message_id_header: message.message_id_header,
    in_reply_to: message.in_reply_to,
    from: message.from,
    to: message.to,
    subject: message.subject,
    content_type: message.content_type,
    body: message.text
  }
})

/** The mailbox named by `:mailbox`, if the grant reaches it; a revoked one answers as a dead token. */
const reached = (world: MailWorld, ctx: ApiContext): Mailbox | SandboxReply => {
  const id = ctx.params["mailbox"] ?? ""
  const mailbox = world.mailboxes.find((m) => m.id === id)
  if (mailbox === undefined || !ctx.reaches(id)) return notFound(`mailbox ${id}`)
  if (mailbox.state === "auth_revoked") return refuse(401, "invalid_token", "The grant was revoked.")
  return mailbox
}

const isMailbox = (value: Mailbox | SandboxReply): value is Mailbox => "address" in value

const send = (world: MailWorld, ctx: ApiContext): SandboxReply => {
  const mailbox = reached(world, ctx)
  if (!isMailbox(mailbox)) return mailbox
  const denied = ctx.requireWrite()
  if (denied !== undefined) return denied
  const body = isRecord(ctx.body) ? ctx.body : {}
  const to = Array.isArray(body["to"]) ? body["to"].filter((v): v is string => typeof v === "string") : []
  const subject = text(body["subject"])
  const words = text(body["text"])
  if (to.length === 0 || !to.every(addressOk) || subject === null || words === null) {
    return invalid("to (addresses), subject and text are required")
  }
  if (mailbox.state !== "active") {
    const [status, code, message] = REFUSALS[mailbox.state]
    return refuse(status, code, message)
  }
  const rejected = to.find((address) => address.toLowerCase().endsWith("@rejected.example"))
  if (rejected !== undefined) return refuse(400, "recipient_rejected", `${rejected} was rejected.`)
  const threadId = text(body["thread_id"])
  if (threadId !== null && !world.threads.some((t) => t.id === threadId && t.mailbox_id === mailbox.id)) {
    return notFound(`thread ${threadId}`)
  }
  const headers = headersFrom(body["headers"])
  if (headers === null) return invalid("headers must map List-Unsubscribe, List-Unsubscribe-Post or X-* names to strings")
  const attachments = attachmentsFrom(body["attachments"])
  if (attachments === null) return invalid("attachments must be [{filename, content_type, content_base64}], at most 10 MB in all")
  const message = record(world, {
    mailbox_id: mailbox.id, direction: "outbound", in_reply_to: text(body["in_reply_to"]), from: mailbox.address, to,
    subject, text: words, content_type: attachments.length === 0 ? "text/plain" : "multipart/mixed", headers, delivery_status: "sent",
    attachments, threadId, at: new Date(ctx.nowMs).toISOString()
  })
  ctx.countWrite()
  return ok({ id: message.id, thread_id: message.thread_id, message_id_header: message.message_id_header })
}

const headersFrom = (value: unknown): Record<string, string> | null => {
  if (value === undefined) return {}
  if (!isRecord(value)) return null
  const out: Record<string, string> = {}
  for (const [name, field] of Object.entries(value)) {
    if (typeof field !== "string" || /[\r\n]/.test(field)) return null
    if (!/^(list-unsubscribe|list-unsubscribe-post|x-[a-z0-9-]+)$/i.test(name)) return null
    out[name] = field
  }
  return out
}

/** `attachments` of a send: each a file name, a media type and base64 content; null when malformed. */
const attachmentsFrom = (value: unknown): Array<SandboxAttachment> | null => {
  if (value === undefined) return []
  if (!Array.isArray(value)) return null
  const out: Array<SandboxAttachment> = []
  let total = 0
  for (const item of value) {
    if (!isRecord(item)) return null
    const filename = text(item["filename"])
    const contentType = text(item["content_type"])
    const content = item["content_base64"]
    if (filename === null || contentType === null || typeof content !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(content)) return null
    const size = Buffer.from(content, "base64").length
    total += size
    out.push({ filename, content_type: contentType, size, content_base64: content })
  }
  return total > 10_000_000 ? null : out
}

/** The fields a draft or a send carries, checked alike. */
const mailFields = (body: Record<string, unknown>) => {
  const to = Array.isArray(body["to"]) ? body["to"].filter((v): v is string => typeof v === "string") : []
  const subject = text(body["subject"])
  const words = text(body["text"])
  if (to.length === 0 || !to.every(addressOk) || subject === null || words === null) return null
  return { to, subject, text: words }
}

const createDraft = (world: MailWorld, ctx: ApiContext): SandboxReply => {
  const mailbox = reached(world, ctx)
  if (!isMailbox(mailbox)) return mailbox
  const denied = ctx.requireWrite()
  if (denied !== undefined) return denied
  const body = isRecord(ctx.body) ? ctx.body : {}
  const fields = mailFields(body)
  if (fields === null) return invalid("to (addresses), subject and text are required")
  const threadId = text(body["thread_id"])
  if (threadId !== null && !world.threads.some((t) => t.id === threadId && t.mailbox_id === mailbox.id)) {
    return notFound(`thread ${threadId}`)
  }
  const draft: Draft = {
    id: world.nextId("em_draft"),
    mailbox_id: mailbox.id,
    thread_id: threadId,
    ...fields,
    updated_at: new Date(ctx.nowMs).toISOString()
  }
  world.drafts.push(draft)
  ctx.countWrite()
  return ok(draft)
}

/** Sending a draft is a send (same refusals); the draft is gone once sent. */
const sendDraft = (world: MailWorld, ctx: ApiContext): SandboxReply => {
  const draft = world.drafts.find((d) => d.id === ctx.params["draft"])
  if (draft === undefined || !ctx.reaches(draft.mailbox_id)) return notFound(`draft ${ctx.params["draft"]}`)
  const reply = send(world, {
    ...ctx,
    params: { mailbox: draft.mailbox_id },
    body: { to: draft.to, subject: draft.subject, text: draft.text, ...(draft.thread_id === null ? {} : { thread_id: draft.thread_id }) }
  })
  if (reply.status === 200) world.drafts.splice(world.drafts.indexOf(draft), 1)
  return reply
}

const modifyLabels = (world: MailWorld, ctx: ApiContext): SandboxReply => {
  const thread = world.threads.find((t) => t.id === ctx.params["thread"])
  if (thread === undefined || !ctx.reaches(thread.mailbox_id)) return notFound(`thread ${ctx.params["thread"]}`)
  const denied = ctx.requireWrite()
  if (denied !== undefined) return denied
  const body = isRecord(ctx.body) ? ctx.body : {}
  const ids = (value: unknown) => Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : []
  const add = ids(body["add"])
  const remove = ids(body["remove"])
  const known = world.labels.filter((l) => l.mailbox_id === thread.mailbox_id).map((l) => l.id)
  const unknown = [...add, ...remove].find((id) => !known.includes(id))
  if (unknown !== undefined) return notFound(`label ${unknown}`)
  thread.label_ids = [...thread.label_ids.filter((id) => !remove.includes(id)), ...add.filter((id) => !thread.label_ids.includes(id))]
  ctx.countWrite()
  return ok(thread)
}

/** Case-insensitive words all found in a message's subject, text, sender or recipients. */
const search = (world: MailWorld, ctx: ApiContext): SandboxReply => {
  const mailbox = reached(world, ctx)
  if (!isMailbox(mailbox)) return mailbox
  const words = (ctx.query.get("q") ?? "").toLowerCase().split(/\s+/).filter((w) => w.length > 0)
  if (words.length === 0) return invalid("q is required")
  const hits = world.messages.filter((m) => {
    if (m.mailbox_id !== mailbox.id) return false
    const haystack = `${m.subject}\n${m.text}\n${m.from}\n${m.to.join(" ")}`.toLowerCase()
    return words.every((w) => haystack.includes(w))
  })
  return paged(hits.toReversed(), ctx.query)
}

export const emailSandbox = defineSandbox<MailWorld>({
  provider: "email",
  seed: () => {
    const world: MailWorld = {
      mailboxes: [1, 2, 3].map((n) => ({
        id: `em_mbx_000${n}`,
        address: `team${n}@sandbox-mail.example`,
        name: `Sandbox Team ${n}`,
        state: "active"
      })),
      threads: [],
      messages: [],
      labels: [],
      drafts: [],
      nextId: idMaker()
    }
    for (const mailbox of world.mailboxes) {
      for (const name of ["INBOX", "SENT", "IMPORTANT"]) world.labels.push({ id: name, mailbox_id: mailbox.id, name, type: "system" })
      world.labels.push({ id: `${mailbox.id}_leads`, mailbox_id: mailbox.id, name: "Leads", type: "user" })
    }
    // One seeded thread per mailbox: a question and the business's answer.
    for (const mailbox of world.mailboxes) {
      const inbound = record(world, {
        mailbox_id: mailbox.id, direction: "inbound", in_reply_to: null, from: "lead@customer.example", to: [mailbox.address],
        subject: "Question about pricing", text: "Hello, what does the premium plan cost?", content_type: "text/plain",
        headers: {}, delivery_status: "received", threadId: null, at: new Date(SEED_TIME).toISOString()
      })
      record(world, {
        mailbox_id: mailbox.id, direction: "outbound", in_reply_to: inbound.message_id_header, from: mailbox.address,
        to: ["lead@customer.example"], subject: "Re: Question about pricing", text: "Hi! It is 49 a month.",
        content_type: "text/plain", headers: {}, delivery_status: "delivered", threadId: inbound.thread_id,
        at: new Date(SEED_TIME + 600_000).toISOString()
      })
    }
    return world
  },
  accounts: (world) => world.mailboxes.map((m) => ({ id: m.id, name: m.address, currency: null, timezone: "UTC" })),
  readScopes: ["mail.read"],
  writeScope: "mail.send",
  routes: [
    {
      method: "GET",
      path: "/v1/accounts/:mailbox",
      handler: (world, ctx) => {
        const mailbox = reached(world, ctx)
        return isMailbox(mailbox) ? ok(mailbox) : mailbox
      }
    },
    {
      method: "GET",
      path: "/v1/accounts/:mailbox/threads",
      handler: (world, ctx) => {
        const mailbox = reached(world, ctx)
        if (!isMailbox(mailbox)) return mailbox
        return paged(
          world.threads.filter((t) => t.mailbox_id === mailbox.id).toSorted((a, b) => b.updated_at.localeCompare(a.updated_at)),
          ctx.query
        )
      }
    },
    { method: "POST", path: "/v1/accounts/:mailbox/messages", handler: send },
    {
      method: "GET",
      path: "/v1/accounts/:mailbox/labels",
      handler: (world, ctx) => {
        const mailbox = reached(world, ctx)
        return isMailbox(mailbox) ? paged(world.labels.filter((l) => l.mailbox_id === mailbox.id), ctx.query) : mailbox
      }
    },
    { method: "POST", path: "/v1/threads/:thread/labels", handler: modifyLabels },
    { method: "GET", path: "/v1/accounts/:mailbox/search", handler: search },
    {
      method: "GET",
      path: "/v1/accounts/:mailbox/drafts",
      handler: (world, ctx) => {
        const mailbox = reached(world, ctx)
        return isMailbox(mailbox) ? paged(world.drafts.filter((d) => d.mailbox_id === mailbox.id), ctx.query) : mailbox
      }
    },
    { method: "POST", path: "/v1/accounts/:mailbox/drafts", handler: createDraft },
    { method: "POST", path: "/v1/drafts/:draft/send", handler: sendDraft },
    {
      method: "GET",
      path: "/v1/threads/:thread/messages",
      handler: (world, ctx) => {
        const id = ctx.params["thread"] ?? ""
        const thread = world.threads.find((t) => t.id === id)
        if (thread === undefined || !ctx.reaches(thread.mailbox_id)) return notFound(`thread ${id}`)
        return paged(world.messages.filter((m) => m.thread_id === id), ctx.query)
      }
    },
    {
      method: "GET",
      path: "/v1/messages/:message",
      handler: (world, ctx) => {
        const id = ctx.params["message"] ?? ""
        const message = world.messages.find((m) => m.id === id)
        return message === undefined || !ctx.reaches(message.mailbox_id) ? notFound(`message ${id}`) : ok(message)
      }
    }
  ],
  state: (world) => ({
    mailboxes: world.mailboxes,
    labels: world.labels,
    threads: world.threads,
    messages: world.messages,
    drafts: world.drafts
  }),
  patch: (world, change) => {
    if ("state" in change && !(MAILBOX_STATES as ReadonlyArray<unknown>).includes(change["state"])) {
      return invalid(`state must be one of ${MAILBOX_STATES.join(", ")}`)
    }
    return patchIn([world.mailboxes, world.threads, world.messages, world.drafts], change, ["mailbox_id", "thread_id", "address"])
  },
  arrive: (world, arrival, ctx) => {
    const at = new Date(ctx.nowMs).toISOString()
    if (arrival["kind"] === "message") {
      const threadId = text(arrival["thread_id"])
      const thread = threadId === null ? undefined : world.threads.find((t) => t.id === threadId)
      if (threadId !== null && thread === undefined) return notFound(`thread ${threadId}`)
      const mailboxId = thread?.mailbox_id ?? text(arrival["mailbox_id"]) ?? world.mailboxes[0]?.id
      const mailbox = world.mailboxes.find((m) => m.id === mailboxId)
      if (mailbox === undefined) return notFound(`mailbox ${String(mailboxId)}`)
      const from = text(arrival["from"])
      const words = text(arrival["text"])
      if (from === null || !addressOk(from) || words === null) return invalid("arrive needs from (an address) and text")
      const last = thread === undefined ? undefined : world.messages.findLast((m) => m.thread_id === thread.id)
      const message = record(world, {
        mailbox_id: mailbox.id, direction: "inbound", in_reply_to: last?.message_id_header ?? null, from, to: [mailbox.address],
        subject: text(arrival["subject"]) ?? (thread !== undefined ? `Re: ${thread.subject}` : "(no subject)"), text: words,
        content_type: "text/plain", headers: {}, delivery_status: "received", threadId: thread?.id ?? null, at
      })
      ctx.push(mailbox.id, payload(message))
      return ok({ message_id: message.id, thread_id: message.thread_id })
    }
    if (arrival["kind"] === "delivery_status") {
      const original = world.messages.find((m) => m.id === arrival["message_id"] && m.direction === "outbound")
      if (original === undefined) return notFound(`sent message ${String(arrival["message_id"])}`)
      const status = text(arrival["status"]) ?? "failed"
      if (status !== "failed" && status !== "delayed" && status !== "delivered") return invalid("status must be failed, delayed or delivered")
      const mailbox = world.mailboxes.find((m) => m.id === original.mailbox_id)
      const diagnostic = text(arrival["diagnostic"]) ?? "550 5.1.1 user unknown"
      const report = deliveryReport(original, original.to[0] ?? "", status, diagnostic, "mx.sandbox-mail.example")
      if (status !== "delayed") original.delivery_status = status
      const bounce = record(world, {
        mailbox_id: original.mailbox_id, direction: "inbound", in_reply_to: original.message_id_header,
        from: "mailer-daemon@sandbox-mail.example", to: [mailbox?.address ?? ""], subject: "Delivery Status Notification",
        text: report.body, content_type: report.contentType, headers: {}, delivery_status: "received", threadId: original.thread_id, at
      })
      ctx.push(original.mailbox_id, payload(bounce))
      return ok({ message_id: bounce.id, thread_id: bounce.thread_id })
    }
    return invalid("arrive.kind must be message or delivery_status")
  },
  grantDeath: grantDeathPayload("email", null)
})
