/**
 * The `connection.*` events (api-endpoints.md, Events), as outbox rows in the style of
 * `outcome.recorded`: `topic` is the event name, `payload` the event (`id`, `type`,
 * `created_at`, `data` with `provider`) and the `delivery` facts the webhooks issue reads.
 */
import type { NewOutboxRow } from "../kernel/outbox/repo.ts"

export const CONNECTION_CONNECTED = "connection.connected"
export const CONNECTION_REVOKED = "connection.revoked"
export const CONNECTION_RECONNECT_REQUIRED = "connection.reconnect_required"
export const LEADGEN_RECEIVED = "leadgen.received"

export type ConnectionTopic = typeof CONNECTION_CONNECTED | typeof CONNECTION_REVOKED | typeof CONNECTION_RECONNECT_REQUIRED

export interface ConnectionFacts {
  readonly profileId: string
  readonly connectionId: string
  readonly provider: string
  readonly accountId: string | null
  readonly provisionedByAppId: string | null
}

export const connectionEvent = (topic: ConnectionTopic, facts: ConnectionFacts, reason?: string): NewOutboxRow => {
  const id = crypto.randomUUID()
  return {
    id,
    profileId: facts.profileId,
    topic,
    payload: {
      id,
      type: topic,
      created_at: new Date().toISOString(),
      data: {
        provider: facts.provider,
        connection_id: facts.connectionId,
        provider_account_id: facts.accountId,
        profile_id: facts.profileId,
        ...(reason === undefined ? {} : { reason })
      },
      delivery: { profile_id: facts.profileId, provisioned_by_app_id: facts.provisionedByAppId }
    }
  }
}

/**
 * `leadgen.received`: the event id is the platform's `leadgen_id` (so the row id is derived from
 * it per profile and a redelivery cannot add a second row); `data` is the lead merged over the
 * webhook value, plus `profile_id`.
 */
export const leadgenEvent = (
  rowId: string,
  leadgenId: string,
  facts: ConnectionFacts,
  data: Readonly<Record<string, unknown>>
): NewOutboxRow => ({
  id: rowId,
  profileId: facts.profileId,
  topic: LEADGEN_RECEIVED,
  payload: {
    id: leadgenId,
    type: LEADGEN_RECEIVED,
    created_at: new Date().toISOString(),
    data: { ...data, profile_id: facts.profileId },
    delivery: { profile_id: facts.profileId, provisioned_by_app_id: facts.provisionedByAppId, connection_id: facts.connectionId }
  }
})

export const MESSAGE_RECEIVED = "message.received"

type Json = Readonly<Record<string, unknown>>
const isJson = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)
const textOf = (value: unknown): string | null =>
  typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : null

/**
 * `message.received` (api-endpoints.md, Events) from a channel's inbound push: the email
 * provider's `{event, event_id, account_id, timestamp, message: {id, thread_id,
 * message_id_header, in_reply_to, from, to, subject, content_type, body}}`, or a chat kind's flat
 * `{event, data: {conversation_id, message_id, from, to, text}}`. `thread_id` is the provider's
 * thread (the one an outbound send opened); an email that is a delivery-status report carries
 * `delivery_failure` read from it (else null).
 */
export const messageReceivedEvent = (
  channel: string,
  facts: ConnectionFacts,
  body: Json,
  readReport: (contentType: string, body: string) => {
    readonly originalMessageId: string | null
    readonly recipient: string | null
    readonly action: string
    readonly status: string | null
    readonly diagnostic: string | null
  } | null
): NewOutboxRow => {
  const id = crypto.randomUUID()
  const message = isJson(body["message"]) ? body["message"] : isJson(body["data"]) ? body["data"] : {}
  const timestamp = typeof body["timestamp"] === "number" ? new Date(body["timestamp"] * 1000).toISOString() : new Date().toISOString()
  const contentType = textOf(message["content_type"]) ?? ""
  const content = textOf(message["body"]) ?? textOf(message["text"])
  const report = channel === "email" && content !== null ? readReport(contentType, content) : null
  return {
    id,
    profileId: facts.profileId,
    topic: MESSAGE_RECEIVED,
    payload: {
      id,
      type: MESSAGE_RECEIVED,
      created_at: new Date().toISOString(),
      data: {
        channel,
        profile_id: facts.profileId,
        connection_id: facts.connectionId,
        message_id: textOf(message["id"]) ?? textOf(message["message_id"]),
        thread_id: textOf(message["thread_id"]) ?? textOf(message["conversation_id"]),
        ...(channel === "email"
          ? {
            rfc822_message_id: textOf(message["message_id_header"]),
            in_reply_to: textOf(message["in_reply_to"]),
            subject: textOf(message["subject"])
          }
          : {}),
        from: message["from"] ?? null,
        to: message["to"] ?? null,
        text: report === null ? content : null,
        received_at: timestamp,
        ...(channel === "email"
          ? {
            delivery_failure: report === null ? null : {
              failed_recipient: report.recipient,
              status: report.status,
              original_rfc822_message_id: report.originalMessageId,
              action: report.action,
              diagnostic_code: report.diagnostic
            }
          }
          : {})
      },
      delivery: { profile_id: facts.profileId, provisioned_by_app_id: facts.provisionedByAppId, connection_id: facts.connectionId }
    }
  }
}
