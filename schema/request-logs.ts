/**
 * A profile's recent API requests (issue 33, decision 0130): what the request log keeps of each
 * profile-grain `/api/v1` call, newest first, for 7 days. Never a body, query string or header.
 */
import { Schema } from "effect"
import { Page, PageQuery } from "./common.ts"
import { LiteralParam } from "./query.ts"

export const REQUEST_LOG_RETENTION_DAYS = 7

export const REQUEST_LOG_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const

export const RequestLog = Schema.Struct({
  id: Schema.String.annotate({ description: "The log entry's id" }),
  request_id: Schema.String.annotate({ description: "The request's id, as its `X-Request-Id` answered it" }),
  method: Schema.String.annotate({ description: "The HTTP method" }),
  path: Schema.String.annotate({ description: "The path called, without its query string (at most 512 characters)" }),
  route: Schema.NullOr(Schema.String).annotate({
    description: "The route template the path matched (`/api/v1/webhooks/deliveries/:id/attempts`)"
  }),
  status: Schema.Int.annotate({ description: "The HTTP status answered" }),
  duration_ms: Schema.Int.annotate({ description: "How long the service took to answer, in milliseconds" }),
  principal_kind: Schema.Literals(["api_key", "user_token", "session"]).annotate({
    description: "Who called: an API key, a person's MCP user token or a console session"
  }),
  key_id: Schema.NullOr(Schema.String).annotate({ description: "The API key's id when a key called (never its secret); null otherwise" }),
  created_at: Schema.String.annotate({ description: "When the request arrived (ISO 8601, UTC)" })
}).annotate({ identifier: "RequestLog" })
export type RequestLog = typeof RequestLog.Type

export const RequestLogPage = Page(RequestLog)

/** Status classes and the codes this service answers: an enum, so the published description states exactly what is taken. */
export const REQUEST_LOG_STATUSES = [
  "2xx", "3xx", "4xx", "5xx",
  "200", "201", "202", "204", "301", "302", "303", "304", "307", "308",
  "400", "401", "403", "404", "405", "409", "410", "413", "415", "422", "429",
  "500", "501", "502", "503", "504"
] as const

const StatusParam = LiteralParam(
  REQUEST_LOG_STATUSES,
  "only answers of this status: a class (`2xx`, `3xx`, `4xx`, `5xx`) or an exact code (`404`)"
)

const PathPrefixParam = Schema.String.annotate({ description: "only paths starting with this (`/api/v1/webhooks`)" }).check(
  Schema.isPattern(/^\/[^?#]{0,511}$/u, { expected: "a path starting with / (at most 512 characters, no query string)" })
)

const RequestIdParam = Schema.String.annotate({ description: "only the request with this id (from its `X-Request-Id`)" }).check(
  Schema.isPattern(/^[A-Za-z0-9._:-]{1,128}$/u, { expected: "a request id (letters, digits, . _ : -, at most 128 characters)" })
)

export const RequestLogsQuery = {
  ...PageQuery,
  status: Schema.optionalKey(StatusParam),
  method: Schema.optionalKey(LiteralParam(REQUEST_LOG_METHODS, "only requests with this method")),
  path_prefix: Schema.optionalKey(PathPrefixParam),
  request_id: Schema.optionalKey(RequestIdParam)
}
export type RequestLogsQuery = Schema.Struct.Type<typeof RequestLogsQuery>
