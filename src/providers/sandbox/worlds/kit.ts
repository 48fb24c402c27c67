/**
 * What every simulated world below shares: the request a world's API answers, its replies, the
 * pushes an arrival produces (the sandbox core signs and posts them), seeded randomness, paging
 * and the generic `PATCH _state {objects}` (plain modules: no HTTP, no Effect, so a world is a
 * deterministic state machine the core drives).
 */

export interface WorldRequest {
  readonly method: string
  /** Path segments after `/sandbox/<provider>/v1/`. */
  readonly path: ReadonlyArray<string>
  readonly query: URLSearchParams
  readonly body: unknown
  /** The accounts the bearer token reaches (from the persona picked at consent). */
  readonly accountIds: ReadonlyArray<string>
  /** Scopes the token carries. */
  readonly scopes: ReadonlyArray<string>
}

export interface WorldReply {
  readonly status: number
  readonly body: unknown
  readonly headers?: Readonly<Record<string, string>>
}

/** A callback the provider posts to every subscription of `accountId`. */
export interface WorldPush {
  readonly accountId: string
  readonly body: unknown
}

export interface WorldAccount {
  readonly id: string
  readonly name: string
  readonly currency: string | null
  readonly timezone: string | null
}

export interface WorldOutcome {
  readonly reply: WorldReply
  readonly pushes: ReadonlyArray<WorldPush>
}

/** One provider kind's simulated world. */
export interface World {
  /** Accounts a consent under `persona` grants (first seeded one, or the first two). */
  readonly accounts: (persona: string) => ReadonlyArray<WorldAccount>
  /** Scopes a consent under `persona` grants; `no_manage_ads_permission` drops the write scope. */
  readonly scopes: (persona: string) => ReadonlyArray<string>
  /** The scope a write needs (the core's `missing_permission` fault withholds it). */
  readonly writeScope: string
  /** Answers `/v1/...` beyond the shared `/v1/me` and subscriptions; null when no route matches. */
  readonly handle: (request: WorldRequest) => WorldOutcome | null
  readonly state: () => Record<string, unknown>
  readonly patch: (body: unknown) => WorldOutcome
}

export const ok = (body: unknown, pushes: ReadonlyArray<WorldPush> = []): WorldOutcome => ({
  reply: { status: 200, body },
  pushes
})

export const fail = (status: number, code: string, message: string, extra: Record<string, unknown> = {}): WorldOutcome => ({
  reply: { status, body: { error: { code, message, ...extra } } },
  pushes: []
})

export const notFound = (what: string) => fail(404, "not_found", `${what} does not exist`)
export const invalid = (message: string) => fail(400, "invalid_parameter", message)
export const forbidden = (permission: string) =>
  fail(403, "permission_missing", `the grant lacks ${permission}`, { permission })

/** mulberry32: the same seed gives the same world on every start. */
export const seeded = (seed: string) => {
  let state = 0
  for (let i = 0; i < seed.length; i++) state = (Math.imul(state ^ seed.charCodeAt(i), 2654435761) + i) >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A stable integer in [0, bound) for a key: daily figures need no stored history. */
export const hashInt = (key: string, bound: number) => Math.floor(seeded(key)() * bound)

/** Cursor paging as docs/sandbox-providers.md fixes it: `?limit` (max 500) and `?after`. */
export const page = <A>(items: ReadonlyArray<A>, query: URLSearchParams): WorldOutcome => {
  const limit = Math.min(Math.max(Number(query.get("limit") ?? "100") || 100, 1), 500)
  const after = Number(query.get("after") ?? "0") || 0
  const slice = items.slice(after, after + limit)
  const next = after + limit < items.length ? String(after + limit) : null
  return ok({ data: slice, paging: { next } })
}

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const str = (value: unknown): string | null => (typeof value === "string" && value.length > 0 ? value : null)

/** `{objects: [{id, ...}]}` set on whichever object carries the id; unknown ids are 404. */
export const patchObjects = (
  collections: ReadonlyArray<Array<{ id: string } & Record<string, unknown>>>,
  body: unknown,
  readOnly: ReadonlyArray<string> = []
): { readonly outcome: WorldOutcome; readonly changed: ReadonlyArray<Record<string, unknown>> } => {
  const objects = isRecord(body) && Array.isArray(body["objects"]) ? body["objects"] : null
  if (objects === null) return { outcome: invalid("body must be {objects: [...]} or {arrive: {...}}"), changed: [] }
  const targets: Array<[Record<string, unknown>, Record<string, unknown>]> = []
  for (const change of objects) {
    if (!isRecord(change) || typeof change["id"] !== "string") {
      return { outcome: invalid("every object needs an id"), changed: [] }
    }
    const target = collections.flatMap((items) => items).find((item) => item.id === change["id"])
    if (target === undefined) return { outcome: notFound(`object ${change["id"]}`), changed: [] }
    targets.push([target, change])
  }
  for (const [target, change] of targets) {
    for (const [key, value] of Object.entries(change)) {
      if (key !== "id" && !readOnly.includes(key)) target[key] = value
    }
  }
  return { outcome: ok({ updated: targets.length }), changed: targets.map(([target]) => target) }
}

export const nowIso = () => new Date().toISOString()
export const unixSeconds = () => Math.floor(Date.now() / 1000)

/** A counter per prefix, so ids are readable and stable for a given sequence of writes. */
export const idMaker = () => {
  const counters = new Map<string, number>()
  return (prefix: string) => {
    const next = (counters.get(prefix) ?? 0) + 1
    counters.set(prefix, next)
    return `${prefix}_${String(next).padStart(4, "0")}`
  }
}

export const personaAccountCount = (persona: string) => (persona === "two_accounts" ? 2 : 1)
