/**
 * The inbound messages a provider callback carries, for the inbox's copy (decision 0079): the
 * account and the provider's message id of each; the message itself is read back through the
 * port. Receipts (delivered, read) and other events carry none.
 *
 * - `social_dm`, `page_messenger`: `{object, entry: [{id, messaging: [{message: {mid}}]}]}`.
 * - `chat_app_a`: `{object, entry: [{id, changes: [{field: "messages", value: {messages: [{id}]}}]}]}`.
 * - `short_video_messaging`: `{event: "message.received", account_id, data: {message_id}}`.
 * - `email`: `{event: "message.received", account_id, message: {id}}`.
 */
type Json = Readonly<Record<string, unknown>>

const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)
const text = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null)
const records = (value: unknown): ReadonlyArray<Json> => (Array.isArray(value) ? value.filter(isRecord) : [])

export interface PushedMessage {
  readonly accountId: string
  readonly messageId: string
  /** What the push itself says of the message (for `message.received`; the inbox reads it back instead). */
  readonly seen: PushedContent
}

export interface PushedContent {
  readonly from: string | null
  readonly to: string | null
  readonly text: string | null
  readonly conversationId: string | null
  /** Unix seconds, when the push gives them. */
  readonly timestamp: number | null
}

const none: PushedContent = { from: null, to: null, text: null, conversationId: null, timestamp: null }

const present = (accountId: string | null, messageId: string | null, seen: PushedContent = none): ReadonlyArray<PushedMessage> =>
  accountId === null || messageId === null ? [] : [{ accountId, messageId, seen }]

const seconds = (value: unknown, unit: number): number | null => {
  const number = typeof value === "number" ? value : typeof value === "string" && /^\d+$/.test(value) ? Number(value) : NaN
  return Number.isFinite(number) ? Math.floor(number / unit) : null
}

export const pushedMessages = (provider: string, body: Json): ReadonlyArray<PushedMessage> => {
  switch (provider) {
    case "social_dm":
    case "page_messenger":
      return records(body["entry"]).flatMap((entry) =>
        records(entry["messaging"]).flatMap((event) =>
          isRecord(event["message"])
            ? present(text(entry["id"]), text(event["message"]["mid"]), {
              from: isRecord(event["sender"]) ? text(event["sender"]["id"]) : null,
              to: isRecord(event["recipient"]) ? text(event["recipient"]["id"]) : null,
              text: text(event["message"]["text"]),
              conversationId: null,
              // Milliseconds in this family's pushes.
              timestamp: seconds(event["timestamp"], 1000)
            })
            : []
        )
      )
    case "chat_app_a":
      return records(body["entry"]).flatMap((entry) =>
        records(entry["changes"]).flatMap((change) =>
          change["field"] === "messages" && isRecord(change["value"])
            ? records(change["value"]["messages"]).flatMap((message) =>
              present(text(entry["id"]), text(message["id"]), {
                from: text(message["from"]),
                to: isRecord(change["value"]) && isRecord(change["value"]["metadata"])
                  ? text(change["value"]["metadata"]["display_phone_number"])
                  : null,
                text: isRecord(message["text"]) ? text(message["text"]["body"]) : null,
                conversationId: null,
                timestamp: seconds(message["timestamp"], 1)
              })
            )
            : []
        )
      )
    case "short_video_messaging":
      return body["event"] === "message.received" && isRecord(body["data"])
        ? present(text(body["account_id"]), text(body["data"]["message_id"]))
        : []
    case "email":
      return body["event"] === "message.received" && isRecord(body["message"])
        ? present(text(body["account_id"]), text(body["message"]["id"]))
        : []
    default:
      return []
  }
}
