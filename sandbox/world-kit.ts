import { randomUUID } from "node:crypto"

/**
 * Small pieces the seeded sandbox worlds share: a seeded random source (the same data on every
 * start, so tests and demos can name objects), keyset paging with opaque cursors (a sync that
 * pages while objects change skips nothing), and the refusals a world's transitions can answer.
 */

/** mulberry32: tiny, fast, and deterministic for a given seed. */
export const seededRandom = (seed: number) => {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <A>(items: ReadonlyArray<A>): A => items[Math.floor(next() * items.length)]!
  }
}
export type SeededRandom = ReturnType<typeof seededRandom>

/** A stable seed from a name (a shop handle, an account id). */
export const seedOf = (name: string) => {
  let hash = 2166136261
  for (let i = 0; i < name.length; i++) {
    hash = Math.imul(hash ^ name.charCodeAt(i), 16777619)
  }
  return hash >>> 0
}

/** Seeded objects are dated back from this instant, so every start shows the same history. */
export const SEED_EPOCH_MS = Date.UTC(2026, 0, 1)

export const isoAt = (ms: number) => new Date(ms).toISOString()

const FIRST_NAMES = ["Ana", "Luis", "Marta", "Jorge", "Lucia", "Pablo", "Sofia", "Diego", "Elena", "Carlos", "Laura", "Mateo"]
const LAST_NAMES = ["Garcia", "Lopez", "Martinez", "Sanchez", "Perez", "Gomez", "Ruiz", "Diaz", "Moreno", "Alvarez"]

/** A made-up person: deterministic for the random source, unique by `n`. */
export const seededPerson = (random: SeededRandom, n: number, domain: string) => {
  const first_name = random.pick(FIRST_NAMES)
  const last_name = random.pick(LAST_NAMES)
  return {
    first_name,
    last_name,
    email: `${first_name}.${last_name}.${n}@${domain}`.toLowerCase(),
    phone: `+3460${String(1_000_000 + n * 7919).padStart(7, "0").slice(-7)}`
  }
}

/** A change a test control or an API write refused, answered as the provider's error body. */
export class WorldRefusal {
  readonly _tag = "WorldRefusal"
  readonly status: 400 | 404 | 409
  readonly code: "invalid_parameter" | "not_found" | "conflict"
  readonly message: string
  constructor(status: 400 | 404 | 409, code: "invalid_parameter" | "not_found" | "conflict", message: string) {
    this.status = status
    this.code = code
    this.message = message
  }
}

export interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly paging: { readonly next: string | null }
}

export const MAX_PAGE = 500
export const DEFAULT_PAGE = 100

/**
 * One page of `items` (already filtered) in the order of `key`, after the opaque cursor `after`.
 * The cursor is the last key answered, so objects added or moved between pages are neither
 * skipped nor repeated for a sync that reads `updated_at` keys.
 */
export const keysetPage = <A>(
  items: ReadonlyArray<A>,
  key: (item: A) => string,
  request: { readonly limit?: number | undefined; readonly after?: string | undefined }
): Page<A> | WorldRefusal => {
  const limit = request.limit ?? DEFAULT_PAGE
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    return new WorldRefusal(400, "invalid_parameter", `limit must be an integer from 1 to ${MAX_PAGE}`)
  }
  let afterKey: string | null = null
  if (request.after !== undefined && request.after !== "") {
    afterKey = decodeCursor(request.after)
    if (afterKey === null) return new WorldRefusal(400, "invalid_parameter", "after is not a cursor this API issued")
  }
  const sorted = [...items].sort((a, b) => compare(key(a), key(b)))
  const rest = afterKey === null ? sorted : sorted.filter((item) => compare(key(item), afterKey) > 0)
  const data = rest.slice(0, limit)
  const next = rest.length > limit ? encodeCursor(key(data[data.length - 1]!)) : null
  return { data, paging: { next } }
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

const encodeCursor = (key: string) => Buffer.from(`k:${key}`, "utf8").toString("base64url")
const decodeCursor = (cursor: string): string | null => {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null
  const text = Buffer.from(cursor, "base64url").toString("utf8")
  return text.startsWith("k:") ? text.slice(2) : null
}

/** Reads an ISO 8601 instant given as a filter (`updated_since`, `created_since`); null when absent. */
export const sinceFilter = (name: string, value: string | undefined): number | null | WorldRefusal => {
  if (value === undefined || value === "") return null
  const ms = Date.parse(value)
  return Number.isNaN(ms) || !/^\d{4}-\d{2}-\d{2}/.test(value)
    ? new WorldRefusal(400, "invalid_parameter", `${name} must be an ISO 8601 date-time`)
    : ms
}

/** A pushed callback a world change produces: the sandbox core signs it and posts it to subscribers. */
export interface WorldPush {
  readonly accountId: string
  readonly body: unknown
}

/**
 * The callback envelope of the crm, commerce and cardgw sandboxes: `id` the provider event id
 * (the receiver deduplicates on it; random, so a restarted sandbox never repeats one), `type`
 * the event as the provider names it (`deal.stage_changed`, `orders/updated`).
 */
export const worldPush = (
  accountId: string,
  type: string,
  nowMs: number,
  data: Readonly<Record<string, unknown>>,
  extra: Readonly<Record<string, unknown>> = {}
): WorldPush => ({
  accountId,
  body: { id: `evt_${randomUUID()}`, type, account_id: accountId, ...extra, created_at: isoAt(nowMs), data }
})

/** What an arrival made: the new object under its kind's name (the reply), and what is pushed. */
export interface Arrived {
  readonly reply: Readonly<Record<string, unknown>>
  readonly pushes: ReadonlyArray<WorldPush>
}

/**
 * One page of an account's objects dated at or after the `since` filter (`updated_since`,
 * `created_since`), oldest first by (date, id): the list-since read the crm, commerce and cardgw
 * worlds share. A malformed filter or cursor is the refusal.
 */
export const listSince = <A extends { readonly id: string }>(
  items: Iterable<A>,
  options: {
    /** Whether the object is the calling account's. */
    readonly owned: (item: A) => boolean
    /** The filter's name and value as the caller gave it. */
    readonly filter: string
    readonly since: string | undefined
    /** The date the filter and the order read (`updated_at`, `created_at`). */
    readonly at: (item: A) => string
  },
  request: { readonly limit?: number | undefined; readonly after?: string | undefined }
): Page<A> | WorldRefusal => {
  const since = sinceFilter(options.filter, options.since)
  if (since instanceof WorldRefusal) return since
  const matching = [...items].filter((item) => options.owned(item) && (since === null || Date.parse(options.at(item)) >= since))
  return keysetPage(matching, (item) => `${options.at(item)}|${item.id}`, request)
}

/** The object when it is the calling account's, else 404 naming its `kind` (another account's object is not found either). */
export const ownedOne = <A>(found: A | undefined, owned: (item: A) => boolean, kind: string, id: string): A | WorldRefusal =>
  found !== undefined && owned(found) ? found : new WorldRefusal(404, "not_found", `no ${kind} ${id}`)
