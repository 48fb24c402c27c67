/**
 * `email`, a mail provider's API: mailboxes (each with a `state` a test sets to make sends fail
 * the way real providers refuse them), threads and messages, sending (answers the message and
 * thread ids), inbound mail and RFC 3464 delivery-status reports pushed to the subscriptions.
 *
 * Send refusals by mailbox state (`PATCH _state {objects: [{id: <mailbox>, state}]}`):
 * `suspended` 403 `account_suspended`, `disabled` 403 `mailbox_disabled`, `auth_revoked` 401
 * `invalid_token`, `quota_exceeded` 403 `quota_exceeded` (a daily quota: not a 429, which clients
 * would retry), `recipient_rejected` 400 `recipient_rejected`; any recipient at
 * `@rejected.example` is refused that way whatever the state.
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
  str,
  unixSeconds,
  type World,
  type WorldOutcome,
  type WorldPush,
  type WorldRequest
} from "./kit.ts"

const WRITE_SCOPE = "mail.send"
const READ_SCOPE = "mail.read"

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
  /** Outbound: `sent`, then `delivered` or `failed` when a report arrives; inbound: `received`. */
  delivery_status: "received" | "sent" | "delivered" | "failed"
}

interface MailMessage extends MailFields {
  id: string
  thread_id: string
  /** The RFC 5322 Message-ID, so replies can thread by `In-Reply-To`. */
  message_id_header: string
  created_at: string
  [field: string]: unknown
}

const REFUSALS: Record<Exclude<MailboxState, "active">, readonly [number, string, string]> = {
  suspended: [403, "account_suspended", "the account is suspended"],
  disabled: [403, "mailbox_disabled", "the mailbox is disabled"],
  auth_revoked: [401, "invalid_token", "the grant was revoked"],
  quota_exceeded: [403, "quota_exceeded", "the daily sending quota is used up"],
  recipient_rejected: [400, "recipient_rejected", "the recipient was rejected"]
}

const addressOk = (value: string) => /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(value)

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

export const emailWorld = (): World => {
  const nextId = idMaker()
  const mailboxes: Array<Mailbox> = [1, 2, 3].map((n) => ({
    id: `em_mbx_000${n}`,
    address: `team${n}@sandbox-mail.example`,
    name: `Sandbox Team ${n}`,
    state: "active"
  }))
  const threads: Array<Thread> = []
  const messages: Array<MailMessage> = []
  let writeCount = 0

  const record = (fields: MailFields & {
    readonly threadId: string | null
  }): MailMessage => {
    const at = new Date().toISOString()
    const known = fields.threadId === null ? undefined : threads.find((t) => t.id === fields.threadId)
    const thread: Thread = known ?? { id: nextId("em_thr"), mailbox_id: fields.mailbox_id, subject: fields.subject, updated_at: at }
    if (known === undefined) threads.push(thread)
    thread.updated_at = at
    const id = nextId("em_msg")
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
      delivery_status: fields.delivery_status,
      created_at: at
    }
    messages.push(message)
    return message
  }

  // One seeded inbound thread per mailbox with the business's reply.
  for (const mailbox of mailboxes) {
    const inbound = record({
      mailbox_id: mailbox.id, direction: "inbound", in_reply_to: null, from: "lead@customer.example", to: [mailbox.address],
      subject: "Question about pricing", text: "Hello, what does the premium plan cost?", content_type: "text/plain",
      delivery_status: "received", threadId: null
    })
    record({
      mailbox_id: mailbox.id, direction: "outbound", in_reply_to: inbound.message_id_header, from: mailbox.address,
      to: ["lead@customer.example"], subject: "Re: Question about pricing", text: "Hi! It is 49 a month.",
      content_type: "text/plain", delivery_status: "delivered", threadId: inbound.thread_id
    })
  }

  const pushMessage = (message: MailMessage, body?: string): WorldPush => ({
    accountId: message.mailbox_id,
    body: {
      event: "message.received",
      event_id: `evt_${message.id}`,
      mailbox_id: message.mailbox_id,
      timestamp: unixSeconds(),
      message: {
        id: message.id,
        thread_id: message.thread_id,
        message_id_header: message.message_id_header,
        in_reply_to: message.in_reply_to,
        from: message.from,
        to: message.to,
        subject: message.subject,
        content_type: message.content_type,
        body: body ?? message.text
      }
    }
  })

  const send = (request: WorldRequest, mailbox: Mailbox): WorldOutcome => {
    if (!request.scopes.includes(WRITE_SCOPE)) return forbidden(WRITE_SCOPE)
    const body = isRecord(request.body) ? request.body : {}
    const to = Array.isArray(body["to"]) ? body["to"].filter((v): v is string => typeof v === "string") : []
    const subject = str(body["subject"])
    const text = str(body["text"])
    if (to.length === 0 || !to.every(addressOk) || subject === null || text === null) {
      return invalid("to (addresses), subject and text are required")
    }
    if (mailbox.state !== "active") {
      const [status, code, message] = REFUSALS[mailbox.state]
      return fail(status, code, message)
    }
    const rejected = to.find((address) => address.toLowerCase().endsWith("@rejected.example"))
    if (rejected !== undefined) return fail(400, "recipient_rejected", `${rejected} was rejected`)
    const threadId = str(body["thread_id"])
    if (threadId !== null && !threads.some((t) => t.id === threadId && t.mailbox_id === mailbox.id)) {
      return notFound(`thread ${threadId}`)
    }
    const message = record({
      mailbox_id: mailbox.id, direction: "outbound", in_reply_to: str(body["in_reply_to"]), from: mailbox.address, to,
      subject, text, content_type: "text/plain", delivery_status: "sent", threadId
    })
    writeCount++
    return ok({ id: message.id, thread_id: message.thread_id, message_id_header: message.message_id_header })
  }

  const handle = (request: WorldRequest): WorldOutcome | null => {
    const [first, id, sub] = request.path
    if (first === "accounts" && id !== undefined) {
      const mailbox = mailboxes.find((m) => m.id === id)
      if (mailbox === undefined || !request.accountIds.includes(id)) return notFound(`mailbox ${id}`)
      // A revoked grant answers every call as a dead token, as the real providers do.
      if (mailbox.state === "auth_revoked") return fail(401, "invalid_token", "the grant was revoked")
      if (request.method === "GET" && sub === undefined) return ok(mailbox)
      if (request.method === "GET" && sub === "threads") {
        return page(threads.filter((t) => t.mailbox_id === id).toSorted((a, b) => b.updated_at.localeCompare(a.updated_at)), request.query)
      }
      if (request.method === "POST" && sub === "messages") return send(request, mailbox)
    }
    if (request.method === "GET" && first === "threads" && id !== undefined && sub === "messages") {
      const thread = threads.find((t) => t.id === id)
      if (thread === undefined || !request.accountIds.includes(thread.mailbox_id)) return notFound(`thread ${id}`)
      return page(messages.filter((m) => m.thread_id === id), request.query)
    }
    if (request.method === "GET" && first === "messages" && id !== undefined && sub === undefined) {
      const message = messages.find((m) => m.id === id)
      if (message === undefined || !request.accountIds.includes(message.mailbox_id)) return notFound(`message ${id}`)
      return ok(message)
    }
    return null
  }

  const arrive = (body: Record<string, unknown>): WorldOutcome => {
    if (body["kind"] === "message") {
      const threadId = str(body["thread_id"])
      const thread = threadId === null ? undefined : threads.find((t) => t.id === threadId)
      if (threadId !== null && thread === undefined) return notFound(`thread ${threadId}`)
      const mailbox = mailboxes.find((m) => m.id === (thread?.mailbox_id ?? str(body["mailbox_id"]) ?? mailboxes[0]?.id))
      if (mailbox === undefined) return notFound("mailbox")
      const from = str(body["from"])
      const text = str(body["text"])
      if (from === null || !addressOk(from) || text === null) return invalid("arrive needs from (an address) and text")
      const last = thread === undefined ? undefined : messages.findLast((m) => m.thread_id === thread.id)
      const message = record({
        mailbox_id: mailbox.id, direction: "inbound", in_reply_to: last?.message_id_header ?? null, from, to: [mailbox.address],
        subject: str(body["subject"]) ?? (thread !== undefined ? `Re: ${thread.subject}` : "(no subject)"), text,
        content_type: "text/plain", delivery_status: "received", threadId: thread?.id ?? null
      })
      return ok({ message_id: message.id, thread_id: message.thread_id }, [pushMessage(message)])
    }
    if (body["kind"] === "delivery_status") {
      const original = messages.find((m) => m.id === body["message_id"] && m.direction === "outbound")
      if (original === undefined) return notFound(`sent message ${String(body["message_id"])}`)
      const status = str(body["status"]) ?? "failed"
      if (status !== "failed" && status !== "delayed" && status !== "delivered") return invalid("status must be failed, delayed or delivered")
      const mailbox = mailboxes.find((m) => m.id === original.mailbox_id)
      const diagnostic = str(body["diagnostic"]) ?? "550 5.1.1 user unknown"
      const report = deliveryReport(original, original.to[0] ?? "", status, diagnostic, "mx.sandbox-mail.example")
      if (status !== "delayed") original.delivery_status = status
      const bounce = record({
        mailbox_id: original.mailbox_id, direction: "inbound", in_reply_to: original.message_id_header,
        from: "mailer-daemon@sandbox-mail.example", to: [mailbox?.address ?? ""],
        subject: "Delivery Status Notification", text: report.body, content_type: report.contentType,
        delivery_status: "received", threadId: original.thread_id
      })
      return ok({ message_id: bounce.id, thread_id: bounce.thread_id }, [pushMessage(bounce, report.body)])
    }
    return invalid("arrive.kind must be message or delivery_status")
  }

  return {
    accounts: (persona) =>
      mailboxes.slice(0, personaAccountCount(persona)).map((m) => ({ id: m.id, name: m.address, currency: null, timezone: "UTC" })),
    scopes: (persona) => persona === "no_manage_ads_permission" ? [READ_SCOPE] : [READ_SCOPE, WRITE_SCOPE],
    writeScope: WRITE_SCOPE,
    handle,
    state: () => ({ mailboxes, threads, messages, write_count: writeCount }),
    patch: (body) => {
      if (isRecord(body) && isRecord(body["arrive"])) return arrive(body["arrive"])
      if (isRecord(body) && Array.isArray(body["objects"])) {
        const badState = body["objects"].find((o) =>
          isRecord(o) && "state" in o && !(MAILBOX_STATES as ReadonlyArray<unknown>).includes(o["state"])
        )
        if (badState !== undefined) return invalid(`state must be one of ${MAILBOX_STATES.join(", ")}`)
      }
      return patchObjects([mailboxes, threads, messages], body).outcome
    }
  }
}
