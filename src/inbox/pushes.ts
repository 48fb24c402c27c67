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
}

const present = (accountId: string | null, messageId: string | null): ReadonlyArray<PushedMessage> =>
  accountId === null || messageId === null ? [] : [{ accountId, messageId }]

export const pushedMessages = (provider: string, body: Json): ReadonlyArray<PushedMessage> => {
  switch (provider) {
    case "social_dm":
    case "page_messenger":
      return records(body["entry"]).flatMap((entry) =>
        records(entry["messaging"]).flatMap((event) =>
          isRecord(event["message"]) ? present(text(entry["id"]), text(event["message"]["mid"])) : []
        )
      )
    case "chat_app_a":
      return records(body["entry"]).flatMap((entry) =>
        records(entry["changes"]).flatMap((change) =>
          change["field"] === "messages" && isRecord(change["value"])
            ? records(change["value"]["messages"]).flatMap((message) => present(text(entry["id"]), text(message["id"])))
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
