/** Shapes shared by every domain's contract. */
import { Schema } from "effect"
import { CursorParam, LimitParam } from "./query.ts"

/** `pagination` beside `data` on every list: keyset, opaque cursor. */
export const Pagination = Schema.Struct({
  has_next: Schema.Boolean,
  cursor: Schema.NullOr(Schema.String)
})

export const Page = <S extends Schema.Top>(item: S) =>
  Schema.Struct({ data: Schema.Array(item), pagination: Pagination })

/** `?limit=` of list routes: 1 to 100, default 50. */
export const PageQuery = {
  limit: Schema.optionalKey(LimitParam(100, 50)),
  cursor: Schema.optionalKey(CursorParam())
}

export const Uuid = Schema.String.check(Schema.isUUID())

export const isUuid = (value: string): boolean =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)

export const CurrencyCode = Schema.String.check(Schema.isPattern(/^[A-Z]{3}$/, { message: "Expected an ISO-4217 code such as EUR" }))

const isLoopback = (host: string) => host === "localhost" || host === "127.0.0.1" || host === "[::1]"

const parseUrl = (value: string): URL | undefined => {
  if (!URL.canParse(value)) return undefined
  return new URL(value)
}

/** An absolute https URL without a fragment (plain http only on loopback, for development). */
export const RedirectUri = Schema.String.check(Schema.makeFilter((value: string) => {
  const url = parseUrl(value)
  if (url === undefined) return "Expected an absolute URL"
  if (url.hash !== "") return "A redirect URI has no fragment"
  if (url.protocol === "https:" || (url.protocol === "http:" && isLoopback(url.hostname))) return undefined
  return "Expected https (http only for localhost)"
}))

/** A web origin: scheme, host and optional port, nothing else. */
export const WebOrigin = Schema.String.check(Schema.makeFilter((value: string) => {
  const url = parseUrl(value)
  if (url === undefined || url.origin === "null") return "Expected an origin such as https://app.example.com"
  if (url.origin !== value.replace(/\/$/, "")) return "An origin has no path, query or fragment"
  if (url.protocol === "https:" || (url.protocol === "http:" && isLoopback(url.hostname))) return undefined
  return "Expected https (http only for localhost)"
}))

export const originOf = (uri: string): string => new URL(uri).origin

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Text that can reach the database: PostgreSQL refuses NUL in text, and a lone UTF-16 surrogate cannot be encoded. */
export const isStorableText = (value: string): boolean => !value.includes("\u0000") && !LONE_SURROGATE.test(value)

/**
 * An object that also takes keys it does not name (decision 0048). Every request body refuses
 * keys its schema does not name (400 `validation_error`), and the published description says
 * `additionalProperties: false`; the few objects that are open by contract or by protocol wrap
 * their struct in this, so the description shows them open and the decoder lets other keys
 * through. Handlers read only the named fields: the others are never stored.
 */
export const openObject = <const S extends Schema.StructWithRest.Objects>(struct: S) =>
  Schema.StructWithRest(struct, [Schema.Record(Schema.String, Schema.Unknown)])

/** How far a queue's depth is counted: past it, `pending` stops there and `pending_capped` is true (decision 0120). */
export const BACKLOG_COUNT_CAP = 10_000
/** How far the last minute's deliveries are counted (1,667 a second). */
export const BACKLOG_RATE_CAP = 100_000

/**
 * A queue's backlog as its reads show it (issue 34 item 6, decision 0120): what waits, how long
 * the oldest has waited, and how fast it drains. Read when the answer is built, never cached.
 */
export const Backlog = Schema.Struct({
  pending: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(BACKLOG_COUNT_CAP)).annotate({
    description: `Items waiting to be sent (in a retry wait or not yet attempted), counted up to ${BACKLOG_COUNT_CAP}`,
    examples: [42]
  }),
  pending_capped: Schema.Boolean.annotate({
    description: `True when at least ${BACKLOG_COUNT_CAP} items wait: \`pending\` stopped counting there`,
    examples: [false]
  }),
  oldest_pending_age_seconds: Schema.NullOr(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))).annotate({
    description: "Whole seconds since the oldest waiting item was queued; null when nothing waits",
    examples: [95]
  }),
  delivered_last_minute: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(BACKLOG_RATE_CAP)).annotate({
    description: `Items delivered (accepted by the receiver) in the last 60 seconds, counted up to ${BACKLOG_RATE_CAP}: the drain rate, per minute`,
    examples: [120]
  })
}).annotate({
  identifier: "Backlog",
  description: "The queue behind this endpoint: depth, age of the oldest waiting item and delivery rate, read at answer time"
})
export type Backlog = typeof Backlog.Type

/** An empty queue's backlog. */
export const NO_BACKLOG: Backlog = { pending: 0, pending_capped: false, oldest_pending_age_seconds: null, delivered_last_minute: 0 }
