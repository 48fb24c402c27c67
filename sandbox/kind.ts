/**
 * What one simulated provider kind is, for the sandbox core (core.ts). To add a kind, write one
 * file exporting `defineSandbox({...})` and list it in registry.ts:
 *
 * - `seed()` builds the kind's world (deterministic: same seed, same objects), held in memory.
 * - `accounts(world)` lists every account a consent can reach; personas take the first one
 *   (`one_account`, `no_manage_ads_permission`) or the first two (`two_accounts`), unless
 *   `grantAccounts` decides (commerce's `shop`).
 * - `readScopes` and `writeScope`: what a grant carries; `no_manage_ads_permission` and the
 *   `missing_permission` fault drop `writeScope`.
 * - `routes`: the kind's API under `/v1/...` (`:name` segments are parameters). The core has
 *   already checked the bearer token, its rate limit and the faults; `/v1/me` and
 *   subscriptions are the core's. Handlers are plain functions answering a `SandboxReply`; a
 *   write calls `ctx.requireWrite()` first and `ctx.countWrite()` once it is accepted.
 * - `state(world)`: the kind's `_state` body (the core adds `app`, `subscriptions`, `faults`,
 *   `write_count` and `deliveries`); `patch(world, object, ctx)` applies one `{id, ...fields}` of
 *   `PATCH _state {objects}`; `arrive(world, arrival, ctx)` handles `PATCH _state {arrive}` and
 *   queues what the provider pushes with `ctx.push(accountId, payload)`.
 * - `grantDeath(accountId, userId, nowSeconds)`: the payload pushed when a grant dies.
 */
import type { ProviderAccount } from "../src/connections/providers/oauth/port.ts"
import type { ProviderKind } from "../src/connections/providers/registry.ts"

export const PERSONAS = ["one_account", "two_accounts", "no_manage_ads_permission"] as const
export type Persona = (typeof PERSONAS)[number]

export interface SandboxReply {
  readonly status: number
  readonly body: unknown
  readonly headers?: Readonly<Record<string, string>>
}

export const ok = (body: unknown, status = 200): SandboxReply => ({ status, body })

/** The providers' error shape: `{error: {code, message, ...extra}}`. */
export const refuse = (
  status: number,
  code: string,
  message: string,
  extra: Readonly<Record<string, unknown>> = {}
): SandboxReply => ({ status, body: { error: { code, message, ...extra } } })

/** A JSON body's fields; anything but an object reads as none (the route then names what is missing). */
export const bodyFields = (body: unknown): Readonly<Record<string, unknown>> =>
  typeof body === "object" && body !== null && !Array.isArray(body) ? { ...body } : {}

/** Whether a value built by a route step is the refusal to answer instead. */
export const isSandboxReply = (value: object): value is SandboxReply => "status" in value && "body" in value

export const notFound = (what: string) => refuse(404, "not_found", `${what} does not exist`)
export const invalid = (message: string) => refuse(400, "invalid_parameter", message)

export interface Grant {
  readonly id: string
  readonly userId: string
  readonly persona: Persona
  readonly accountIds: ReadonlyArray<string>
  /** The scopes granted at consent; the `missing_permission` fault hides `writeScope` on top. */
  readonly scopes: ReadonlyArray<string>
}

export interface PushContext {
  readonly nowMs: number
  /** Queues a signed push of `payload` to every subscribed callback of `accountId`. */
  readonly push: (accountId: string, payload: unknown) => void
}

export interface ApiContext extends PushContext {
  readonly params: Readonly<Record<string, string>>
  readonly query: URLSearchParams
  readonly body: unknown
  readonly grant: Grant
  /** The scopes in force now (consent's, less the write scope under `missing_permission`). */
  readonly scopes: ReadonlyArray<string>
  /** Whether the grant reaches this account. */
  readonly reaches: (accountId: string) => boolean
  /** Undefined when the grant may write; else the 403 `permission_missing` to answer. */
  readonly requireWrite: () => SandboxReply | undefined
  readonly countWrite: () => void
}

export interface SandboxRoute<W> {
  readonly method: "GET" | "POST" | "PATCH" | "DELETE"
  readonly path: `/v1/${string}`
  readonly handler: (world: W, ctx: ApiContext) => SandboxReply
}

export interface SandboxDefinition<W> {
  readonly provider: ProviderKind
  readonly seed: () => W
  readonly accounts: (world: W) => ReadonlyArray<ProviderAccount>
  readonly grantAccounts?: (world: W, persona: Persona, authorize: URLSearchParams) => ReadonlyArray<string> | SandboxReply
  readonly readScopes: ReadonlyArray<string>
  readonly writeScope: string
  readonly routes: ReadonlyArray<SandboxRoute<W>>
  readonly state: (world: W) => Readonly<Record<string, unknown>>
  /** Undefined when applied; a reply (404 unknown id, 400 bad field) when refused. */
  /** `ctx` queues pushes, for changes the provider tells subscribers of (a deal moved, an order fulfilled). */
  readonly patch: (
    world: W,
    object: Readonly<Record<string, unknown>> & { readonly id: string },
    ctx: PushContext
  ) => SandboxReply | undefined
  readonly arrive: (world: W, arrival: Readonly<Record<string, unknown>>, ctx: PushContext) => SandboxReply
  readonly grantDeath: (accountId: string, userId: string, nowSeconds: number) => unknown
}

/** A kind with its world type closed over, so the registry can hold kinds of different worlds. */
export interface SandboxInstance {
  readonly provider: ProviderKind
  readonly accounts: () => ReadonlyArray<ProviderAccount>
  readonly grantAccounts: (persona: Persona, authorize: URLSearchParams) => ReadonlyArray<string> | SandboxReply
  readonly readScopes: ReadonlyArray<string>
  readonly writeScope: string
  readonly route: (method: string, path: string) =>
    | { readonly params: Record<string, string>; readonly run: (ctx: ApiContext) => SandboxReply }
    | undefined
  readonly state: () => Readonly<Record<string, unknown>>
  readonly patch: (object: Readonly<Record<string, unknown>> & { readonly id: string }, ctx: PushContext) => SandboxReply | undefined
  readonly arrive: (arrival: Readonly<Record<string, unknown>>, ctx: PushContext) => SandboxReply
  readonly grantDeath: (accountId: string, userId: string, nowSeconds: number) => unknown
}

export interface SandboxKind {
  readonly provider: ProviderKind
  /** A fresh world, seeded. */
  readonly create: () => SandboxInstance
}

const matchPath = (pattern: string, path: string): Record<string, string> | undefined => {
  const want = pattern.split("/")
  const got = path.split("/")
  if (want.length !== got.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < want.length; i++) {
    const segment = want[i] ?? ""
    const value = got[i] ?? ""
    if (segment.startsWith(":")) {
      if (value.length === 0) return undefined
      params[segment.slice(1)] = decodeURIComponent(value)
    } else if (segment !== value) return undefined
  }
  return params
}

export const defineSandbox = <W>(definition: SandboxDefinition<W>): SandboxKind => ({
  provider: definition.provider,
  create: () => {
    const world = definition.seed()
    const personaAccounts = (persona: Persona) =>
      definition.accounts(world).slice(0, persona === "two_accounts" ? 2 : 1).map((account) => account.id)
    return {
      provider: definition.provider,
      accounts: () => definition.accounts(world),
      grantAccounts: (persona, authorize) =>
        definition.grantAccounts === undefined ? personaAccounts(persona) : definition.grantAccounts(world, persona, authorize),
      readScopes: definition.readScopes,
      writeScope: definition.writeScope,
      route: (method, path) => {
        for (const route of definition.routes) {
          if (route.method !== method) continue
          const params = matchPath(route.path, path)
          if (params !== undefined) return { params, run: (ctx) => route.handler(world, ctx) }
        }
        return undefined
      },
      state: () => definition.state(world),
      patch: (object, ctx) => definition.patch(world, object, ctx),
      arrive: (arrival, ctx) => definition.arrive(world, arrival, ctx),
      grantDeath: definition.grantDeath
    }
  }
})

/** Small deterministic PRNG (mulberry32): seeded worlds and fault sequences repeat run after run. */
export const seededRandom = (seed: number) => {
  let state = seed >>> 0
  return (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A stable 32-bit hash of a string (FNV-1a), for values derived from ids and dates. */
export const hashOf = (text: string): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

/** A list answer in the providers' paging shape; `after` is the offset of the next item. */
export const paged = <A>(items: ReadonlyArray<A>, query: URLSearchParams): SandboxReply => {
  const limitText = query.get("limit")
  const limit = limitText === null ? 100 : Number(limitText)
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) return invalid("limit must be an integer from 1 to 500")
  const afterText = query.get("after")
  const start = afterText === null ? 0 : Number(afterText)
  if (!Number.isInteger(start) || start < 0) return invalid("after is not a cursor this provider issued")
  const end = start + limit
  return ok({ data: items.slice(start, end), paging: { next: end < items.length ? String(end) : null } })
}
