/**
 * The sandbox core: one in-memory simulated provider per registered kind (kind.ts says how to
 * add one), served under `/sandbox/<provider>/` (docs/sandbox-providers.md is the contract).
 * The core owns what every provider shares: the consent page, codes, tokens and refresh, the
 * grants' personas and scopes, `/v1/me`, subscriptions and signed pushes, the rate limit per
 * token, the faults, and the `_state` / `_faults` test controls; each kind owns its world.
 */
import { Duration, Effect, Option, Schema } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest, HttpServerRequest, HttpServerResponse } from "effect/http"
import { randomBytes } from "node:crypto"
import { escapeHtml, htmlPages } from "../src/platform/html.ts"
import { sandboxClientId, sandboxClientSecret, sandboxCustomAppSecret } from "../src/connections/providers/endpoints.ts"
import { type ProviderKind } from "../src/connections/providers/registry.ts"
import { SANDBOX_WORLD_HEADER, SANDBOX_WORLD_PARAM, type SandboxWorlds } from "../src/connections/providers/sandbox-world.ts"
import { signCallback } from "../src/connections/providers/signing.ts"
import {
  type ApiContext,
  type Grant,
  invalid,
  notFound,
  ok,
  type Persona,
  PERSONAS,
  refuse,
  type SandboxInstance,
  type SandboxKind,
  type SandboxReply,
  seededRandom
} from "./kind.ts"

/** Requests per token per one-second window before a 429 (documented; the client's bucket stays below). */
export const SANDBOX_RATE_LIMIT_PER_SECOND = 100
export const SANDBOX_TOKEN_TTL_SECONDS = 3_600
const CODE_TTL_MS = 10 * 60_000
const PUSH_TIMEOUT_MS = 10_000
const KEPT_DELIVERIES = 100

export interface Faults {
  /** The next N API calls answer 429 with `Retry-After: 1`. */
  throttle: number
  /** This share (0..1) of API calls answer 500, by a seeded sequence. */
  error_rate: number
  /** The next N API calls answer 500 (exact, for retry tests). */
  fail_next: number
  /** API calls wait this long before answering. */
  timeout_ms: number
  /** Grants lack the write scope (the manage-ads permission). */
  missing_permission: boolean
  /** Set true: every grant dies now (401 `invalid_token`) and a grant-death push goes out. */
  revoke_tokens: boolean
  /** How long access tokens issued from now on live (default 3600). */
  token_ttl_seconds: number
  /** The rate limit per token per one-second window (default 100). */
  rate_limit_per_second: number
}

const noFaults = (): Faults => ({ throttle: 0, error_rate: 0, fail_next: 0, timeout_ms: 0, missing_permission: false, revoke_tokens: false, token_ttl_seconds: SANDBOX_TOKEN_TTL_SECONDS,
  rate_limit_per_second: SANDBOX_RATE_LIMIT_PER_SECOND
})

interface GrantRecord extends Grant {
  revoked: boolean
  /** The app the consent was given to: its tokens are exchanged and refreshed by that app only. */
  readonly clientId: string
}

/** Kinds whose merchants register their own (custom-distribution) apps. */
const CUSTOM_APP_PROVIDERS: ReadonlySet<ProviderKind> = new Set(["commerce"])
const MAX_CLIENT_ID_LENGTH = 200

interface Delivery {
  readonly account_id: string
  readonly callback_url: string
  readonly status: number | null
  readonly at: string
}

interface ProviderSandbox {
  /** The profile whose world this is (decision 0109). */
  readonly profileId: string
  readonly instance: SandboxInstance
  readonly clientId: string
  readonly clientSecret: string
  readonly grants: Map<string, GrantRecord>
  readonly codes: Map<string, { readonly grantId: string; readonly redirectUri: string; used: boolean; readonly expiresAtMs: number }>
  /** The secret of a custom app with this client id; undefined when the kind has none (decision 0066). */
  readonly customAppSecret: ((clientId: string) => string) | undefined
  readonly tokens: Map<string, { readonly grantId: string; readonly expiresAtMs: number }>
  readonly refreshTokens: Map<string, string>
  /** account id → callback URL → the grant that subscribed it. */
  readonly subscriptions: Map<string, Map<string, string>>
  readonly windows: Map<string, { start: number; count: number }>
  faults: Faults
  random: () => number
  writeCount: number
  /** API calls answered, and how many of them the rate limit or a fault refused. */
  readonly counters: { api_calls: number; rate_limited: number; faulted: number }
  readonly deliveries: Array<Delivery>
  nextGrant: number
}

/**
 * A code or token of a world: random, with its world's profile after `~`, so the token endpoint
 * and the API find the world from the value alone (it must still be one that world issued).
 */
const secretToken = (prefix: string, profileId: string) => `${prefix}_${randomBytes(18).toString("base64url")}~${profileId}`
const ownerOf = (value: string): string | undefined => {
  const at = value.lastIndexOf("~")
  return at < 0 ? undefined : value.slice(at + 1)
}

const STYLE = "body{font:16px system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f}" +
  "h1{font-size:1.3rem}.note{color:#555;font-size:.9rem}select,button{font:inherit;padding:.4rem .8rem;margin:.3rem 0}" +
  "button[value=approve]{background:#1a56db;color:#fff;border:0;border-radius:4px}"
const pages = htmlPages(STYLE)

const PERSONA_LABELS: Record<Persona, string> = {
  one_account: "One account (default)",
  two_accounts: "Two accounts",
  no_manage_ads_permission: "One account, without the manage permission"
}

const htmlResponse = (status: number, title: string, body: string, formTargets: ReadonlyArray<string> = []) =>
  HttpServerResponse.html(pages.document(title, body)).pipe(
    HttpServerResponse.setStatus(status),
    HttpServerResponse.setHeaders(pages.headers(formTargets))
  )

const errorPage = (status: number, message: string) =>
  htmlResponse(status, "Sandbox provider", `<h1>Cannot continue</h1><p>${escapeHtml(message)}</p>`)

const jsonResponse = (reply: SandboxReply) =>
  HttpServerResponse.jsonUnsafe(reply.body, { status: reply.status, headers: { "cache-control": "no-store", ...reply.headers } })

const decodeJson = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Unknown))

/** A form or JSON body as a plain object; undefined when it is neither. */
const parseBody = (text: string, contentType: string): Record<string, unknown> | undefined => {
  if (text.length === 0) return {}
  if (contentType.includes("application/x-www-form-urlencoded")) return Object.fromEntries(new URLSearchParams(text))
  const parsed = decodeJson(text)
  return Option.isSome(parsed) && isRecord(parsed.value) ? parsed.value : undefined
}

const isAccountList = (value: ReadonlyArray<string> | SandboxReply): value is ReadonlyArray<string> => Array.isArray(value)

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const origin = (url: string) => {
  const parsed = URL.canParse(url) ? new URL(url) : undefined
  return parsed !== undefined && (parsed.protocol === "http:" || parsed.protocol === "https:") ? parsed.origin : undefined
}

/** Whose world a test-control request may act on, or why it may not (answered as `{error: {code, message}}`). */
export type ControlCaller =
  | { readonly _tag: "World"; readonly profileId: string }
  | { readonly _tag: "Refused"; readonly status: number; readonly code: string; readonly message: string }

export interface SandboxesOptions {
  /** `SVC_SANDBOX_SECRET`: the apps' client secrets derive from it. */
  readonly secret: string
  readonly kinds: ReadonlyArray<SandboxKind>
  /** World handles (consent links, pushes). */
  readonly worlds: SandboxWorlds
  /** The credential of a `_state` / `_faults` request: the profile's API key, or the operator's with `?profile_id=`. */
  readonly controlCaller: (request: HttpServerRequest.HttpServerRequest, url: URL) => Effect.Effect<ControlCaller>
  /** Whether a push may go to this callback URL: the service's own `/hooks/<provider>`, or an origin the operator opened. */
  readonly callbackAllowed: (provider: ProviderKind, url: string) => boolean
}

/**
 * Builds every sandbox's state and answers the request handler for `/sandbox/*`. State lives in
 * this process's memory: a restart is a fresh, identically seeded world.
 */
export const makeSandboxes = (options: SandboxesOptions) => {
  const kinds = new Map<string, SandboxKind>(options.kinds.map((kind) => [kind.provider, kind] as const))
  /** `<profile id>/<provider>` → that world's sandbox of the provider, made on first use. */
  const sandboxes = new Map<string, ProviderSandbox>()
  const sandboxOf = (profileId: string, provider: ProviderKind): ProviderSandbox => {
    const key = `${profileId}/${provider}`
    const found = sandboxes.get(key)
    if (found !== undefined) return found
    const kind = kinds.get(provider)
    if (kind === undefined) throw new Error(`no sandbox kind ${provider}`)
    const made: ProviderSandbox = {
      profileId,
      instance: kind.create(),
      clientId: sandboxClientId(kind.provider),
      clientSecret: sandboxClientSecret(options.secret, kind.provider),
      customAppSecret: CUSTOM_APP_PROVIDERS.has(kind.provider)
        ? (clientId) => sandboxCustomAppSecret(options.secret, kind.provider, clientId)
        : undefined,
      grants: new Map(),
      codes: new Map(),
      tokens: new Map(),
      refreshTokens: new Map(),
      subscriptions: new Map(),
      windows: new Map(),
      faults: noFaults(),
      random: seededRandom(17),
      writeCount: 0,
      counters: { api_calls: 0, rate_limited: 0, faulted: 0 },
      deliveries: [],
      nextGrant: 1
    }
    sandboxes.set(key, made)
    return made
  }
  /** The world a code or token was issued in; undefined when it names none this process holds. */
  const sandboxOfSecret = (provider: ProviderKind, value: string | undefined) => {
    const owner = value === undefined ? undefined : ownerOf(value)
    return owner === undefined ? undefined : sandboxes.get(`${owner}/${provider}`)
  }

  const scopesNow = (sandbox: ProviderSandbox, grant: Grant) =>
    sandbox.faults.missing_permission ? grant.scopes.filter((scope) => scope !== sandbox.instance.writeScope) : grant.scopes

  /** Sends queued pushes, each signed, to every callback subscribed for its account; records the outcome. */
  const deliver = (provider: ProviderKind, sandbox: ProviderSandbox, pushes: ReadonlyArray<readonly [string, unknown]>) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const targets = pushes.flatMap(([accountId, payload]) =>
        [...(sandbox.subscriptions.get(accountId)?.keys() ?? [])].map((url) => ({ accountId, url, payload }))
      )
      return yield* Effect.forEach(targets, ({ accountId, url, payload }) => {
        const body = JSON.stringify(payload)
        const request = HttpClientRequest.post(url, {
          headers: {
            ...signCallback(provider, sandbox.clientSecret, body),
            "content-type": "application/json",
            [SANDBOX_WORLD_HEADER]: options.worlds.handle(sandbox.profileId)
          }
        }).pipe(HttpClientRequest.bodyText(body, "application/json"))
        // A redirect is an answer, not a place to go: a push never leaves the URL subscribed.
        return client.execute(request).pipe(
          Effect.provideService(FetchHttpClient.RequestInit, { redirect: "manual" }),
          // The answer is read to its end so the connection can be reused.
          Effect.flatMap((response) => Effect.as(Effect.ignore(response.arrayBuffer), response.status)),
          Effect.timeout(Duration.millis(PUSH_TIMEOUT_MS)),
          Effect.orElseSucceed((): number | null => null),
          Effect.map((status) => {
            const delivery: Delivery = { account_id: accountId, callback_url: url, status, at: new Date().toISOString() }
            sandbox.deliveries.push(delivery)
            if (sandbox.deliveries.length > KEPT_DELIVERIES) sandbox.deliveries.shift()
            return delivery
          })
        )
      }, { concurrency: 4 })
    })

  const pushQueue = () => {
    const queue: Array<readonly [string, unknown]> = []
    return { queue, push: (accountId: string, payload: unknown) => void queue.push([accountId, payload]) }
  }

  // --- Consent --------------------------------------------------------------------------------

  type App = Pick<ProviderSandbox, "clientId" | "clientSecret" | "customAppSecret">
  /** The provider's registered apps, the same in every world. */
  const appOf = (provider: ProviderKind): App => ({
    clientId: sandboxClientId(provider),
    clientSecret: sandboxClientSecret(options.secret, provider),
    customAppSecret: CUSTOM_APP_PROVIDERS.has(provider)
      ? (clientId) => sandboxCustomAppSecret(options.secret, provider, clientId)
      : undefined
  })

  /** The platform's own app, or (where merchants have them) any custom app id of sane length. */
  const knownClient = (sandbox: App, clientId: string) =>
    clientId === sandbox.clientId ||
    (sandbox.customAppSecret !== undefined && clientId.length > 0 && clientId.length <= MAX_CLIENT_ID_LENGTH)

  const secretOf = (sandbox: App, clientId: string) =>
    clientId === sandbox.clientId || sandbox.customAppSecret === undefined ? sandbox.clientSecret : sandbox.customAppSecret(clientId)

  const consent = (provider: ProviderKind, sandbox: ProviderSandbox, method: string, url: URL, body: Record<string, unknown>) => {
    const query = url.searchParams
    const clientId = query.get("client_id")
    const redirectUri = query.get("redirect_uri") ?? ""
    const state = query.get("state") ?? ""
    if (clientId === null || !knownClient(sandbox, clientId)) {
      return errorPage(400, `Unknown app: client_id must be ${sandbox.clientId}${sandbox.customAppSecret === undefined ? "" : " or a custom app's"}.`)
    }
    const scope = query.get("scope")
    const redirectOrigin = origin(redirectUri)
    if (redirectOrigin === undefined) return errorPage(400, "redirect_uri must be an http(s) URL.")
    if (method === "GET") {
      const options = PERSONAS.map((persona) =>
        `<option value="${persona}"${persona === "one_account" ? " selected" : ""}>${escapeHtml(PERSONA_LABELS[persona])}</option>`
      ).join("")
      const shop = query.get("shop")
      return htmlResponse(
        200,
        `Sandbox ${provider}: consent`,
        `<h1>Connect your ${escapeHtml(provider)} account</h1>
<p>The app <b>${escapeHtml(clientId)}</b> asks to read your accounts and manage them on your behalf.</p>
${scope === null ? "" : `<p>Permissions asked: <b>${escapeHtml(scope)}</b></p>`}
${shop === null ? "" : `<p>Shop: <b>${escapeHtml(shop)}</b></p>`}
<form method="post">
<p><label>Sign in as <select name="persona">${options}</select></label></p>
<p><button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="cancel">Cancel</button></p>
</form>
<p class="note">A simulated provider (sandbox mode): no real account is touched.</p>`,
        [redirectOrigin]
      )
    }
    const back = new URL(redirectUri)
    if (body["decision"] === "cancel") {
      back.searchParams.set("error", "access_denied")
      back.searchParams.set("error_reason", "user_denied")
      back.searchParams.set("state", state)
      return HttpServerResponse.redirect(back, { status: 303, headers: { "cache-control": "no-store" } })
    }
    if (body["decision"] !== "approve") return errorPage(400, "Choose Approve or Cancel.")
    const personaInput = body["persona"] ?? "one_account"
    const persona = PERSONAS.find((candidate) => candidate === personaInput)
    if (persona === undefined) return errorPage(400, `Unknown persona: choose one of ${PERSONAS.join(", ")}.`)
    const accounts = sandbox.instance.grantAccounts(persona, query)
    if (!isAccountList(accounts)) {
      const refusal = accounts
      const detail = isRecord(refusal.body) && isRecord(refusal.body["error"]) ? String(refusal.body["error"]["message"]) : "refused"
      return errorPage(refusal.status, detail)
    }
    const grant: GrantRecord = {
      id: `grant_${sandbox.nextGrant++}`,
      userId: `user_${persona}`,
      persona,
      accountIds: accounts,
      scopes: persona === "no_manage_ads_permission"
        ? [...sandbox.instance.readScopes]
        : [...sandbox.instance.readScopes, sandbox.instance.writeScope],
      revoked: false,
      clientId
    }
    sandbox.grants.set(grant.id, grant)
    const code = secretToken("code", sandbox.profileId)
    sandbox.codes.set(code, { grantId: grant.id, redirectUri, used: false, expiresAtMs: Date.now() + CODE_TTL_MS })
    back.searchParams.set("code", code)
    back.searchParams.set("state", state)
    return HttpServerResponse.redirect(back, { status: 303, headers: { "cache-control": "no-store" } })
  }

  // --- Tokens ---------------------------------------------------------------------------------

  const oauthError = (status: number, error: string, description: string) =>
    jsonResponse({ status, body: { error, error_description: description } })

  const issueTokens = (sandbox: ProviderSandbox, grant: GrantRecord, refreshToken: string) => {
    const accessToken = secretToken("tok", sandbox.profileId)
    const ttl = sandbox.faults.token_ttl_seconds
    sandbox.tokens.set(accessToken, { grantId: grant.id, expiresAtMs: Date.now() + ttl * 1000 })
    sandbox.refreshTokens.set(refreshToken, grant.id)
    return jsonResponse(ok({
      access_token: accessToken,
      token_type: "bearer",
      expires_in: ttl,
      refresh_token: refreshToken,
      scope: scopesNow(sandbox, grant).join(" ")
    }))
  }

  const token = (provider: ProviderKind, body: Record<string, unknown>) => {
    const clientId = body["client_id"]
    const secret = body["client_secret"]
    const app = appOf(provider)
    if (typeof clientId !== "string" || !knownClient(app, clientId) || secret !== secretOf(app, clientId)) {
      return oauthError(401, "invalid_client", "unknown client_id or wrong client_secret")
    }
    if (body["grant_type"] === "authorization_code") {
      const given = typeof body["code"] === "string" ? body["code"] : undefined
      const sandbox = sandboxOfSecret(provider, given)
      const code = sandbox === undefined || given === undefined ? undefined : sandbox.codes.get(given)
      if (sandbox === undefined) return oauthError(400, "invalid_grant", "the code is unknown, used, expired or for another redirect_uri")
      if (code === undefined || code.used || code.expiresAtMs < Date.now() || code.redirectUri !== body["redirect_uri"]) {
        return oauthError(400, "invalid_grant", "the code is unknown, used, expired or for another redirect_uri")
      }
      const grant = sandbox.grants.get(code.grantId)
      // A code works for the app it was issued to only (it stays usable for that app).
      if (grant !== undefined && grant.clientId !== clientId) return oauthError(400, "invalid_grant", "the code was issued to another app")
      code.used = true
      if (grant === undefined || grant.revoked) return oauthError(400, "invalid_grant", "the grant was revoked")
      return issueTokens(sandbox, grant, secretToken("ref", sandbox.profileId))
    }
    if (body["grant_type"] === "refresh_token") {
      const refreshToken = typeof body["refresh_token"] === "string" ? body["refresh_token"] : ""
      const sandbox = sandboxOfSecret(provider, refreshToken)
      const grant = sandbox?.grants.get(sandbox.refreshTokens.get(refreshToken) ?? "")
      if (sandbox === undefined || grant === undefined || grant.revoked || grant.clientId !== clientId) {
        return oauthError(400, "invalid_grant", "the refresh token is unknown, revoked or another app's")
      }
      return issueTokens(sandbox, grant, refreshToken)
    }
    return oauthError(400, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
  }

  const bearer = (request: HttpServerRequest.HttpServerRequest) => {
    const header = request.headers["authorization"] ?? ""
    return header.toLowerCase().startsWith("bearer ") ? header.slice(7).trim() : undefined
  }

  /** The live grant behind a bearer token, or undefined when the token is unknown, expired or its grant died. */
  const grantOf = (sandbox: ProviderSandbox, accessToken: string | undefined) => {
    const record = accessToken === undefined ? undefined : sandbox.tokens.get(accessToken)
    if (record === undefined || record.expiresAtMs < Date.now()) return undefined
    const grant = sandbox.grants.get(record.grantId)
    return grant === undefined || grant.revoked ? undefined : grant
  }

  const revokeGrant = (sandbox: ProviderSandbox, grant: GrantRecord) => {
    grant.revoked = true
    for (const subscribers of sandbox.subscriptions.values()) {
      for (const [url, grantId] of subscribers) if (grantId === grant.id) subscribers.delete(url)
    }
  }

  // --- API ------------------------------------------------------------------------------------

  const invalidToken = refuse(401, "invalid_token", "The access token is invalid, expired or revoked.")

  /** Rate limit and faults, in that order; undefined to go on. */
  const gate = (sandbox: ProviderSandbox, accessToken: string) =>
    Effect.gen(function*() {
      const now = Date.now()
      const window = sandbox.windows.get(accessToken)
      if (window === undefined || now - window.start >= 1000) sandbox.windows.set(accessToken, { start: now, count: 1 })
      else if (window.count >= sandbox.faults.rate_limit_per_second) {
        sandbox.counters.rate_limited++
        const retryAfter = Math.max(1, Math.ceil((window.start + 1000 - now) / 1000))
        return {
          ...refuse(429, "rate_limited", `More than ${sandbox.faults.rate_limit_per_second} calls a second on this token.`),
          headers: { "retry-after": String(retryAfter) }
        }
      } else window.count++
      if (sandbox.faults.timeout_ms > 0) yield* Effect.sleep(Duration.millis(sandbox.faults.timeout_ms))
      if (sandbox.faults.throttle > 0) {
        sandbox.faults.throttle--
        sandbox.counters.faulted++
        return { ...refuse(429, "rate_limited", "Throttled (sandbox fault)."), headers: { "retry-after": "1" } }
      }
      if (sandbox.faults.fail_next > 0) {
        sandbox.faults.fail_next--
        sandbox.counters.faulted++
        return refuse(500, "internal", "Internal error (sandbox fault).")
      }
      if (sandbox.faults.error_rate > 0 && sandbox.random() < sandbox.faults.error_rate) {
        sandbox.counters.faulted++
        return refuse(500, "internal", "Internal error (sandbox fault).")
      }
      return undefined
    })

  const api = (
    sandbox: ProviderSandbox,
    request: HttpServerRequest.HttpServerRequest,
    path: string,
    url: URL,
    body: Record<string, unknown>,
    queue: ReturnType<typeof pushQueue>
  ) =>
    Effect.gen(function*() {
      const accessToken = bearer(request)
      const grant = grantOf(sandbox, accessToken)
      sandbox.counters.api_calls++
      if (grant === undefined || accessToken === undefined) return invalidToken
      const refused = yield* gate(sandbox, accessToken)
      if (refused !== undefined) return refused
      const scopes = scopesNow(sandbox, grant)
      const reaches = (accountId: string) => grant.accountIds.includes(accountId)
      if (path === "/v1/me" && request.method === "GET") {
        return ok({
          user_id: grant.userId,
          scopes,
          accounts: sandbox.instance.accounts().filter((account) => reaches(account.id))
        })
      }
      const subscription = /^\/v1\/accounts\/([^/]+)\/subscriptions$/.exec(path)
      if (subscription !== null) {
        const accountId = decodeURIComponent(subscription[1] ?? "")
        if (!reaches(accountId)) return notFound(`account ${accountId}`)
        if (request.method === "POST") {
          const callbackUrl = body["callback_url"]
          if (typeof callbackUrl !== "string" || origin(callbackUrl) === undefined) return invalid("callback_url must be an http(s) URL")
          if (!options.callbackAllowed(sandbox.instance.provider, callbackUrl)) {
            return invalid("callback_url must be the service's own /hooks/<provider> (or an origin the operator opened)")
          }
          const subscribers = sandbox.subscriptions.get(accountId) ?? new Map<string, string>()
          subscribers.set(callbackUrl, grant.id)
          sandbox.subscriptions.set(accountId, subscribers)
          return ok({ success: true })
        }
        if (request.method === "DELETE") {
          sandbox.subscriptions.delete(accountId)
          return ok({ success: true })
        }
      }
      const route = sandbox.instance.route(request.method, path)
      if (route === undefined) return notFound(`${request.method} ${path}`)
      const ctx: ApiContext = {
        params: route.params,
        query: url.searchParams,
        body,
        grant,
        scopes,
        reaches,
        nowMs: Date.now(),
        push: queue.push,
        requireWrite: () =>
          scopes.includes(sandbox.instance.writeScope)
            ? undefined
            : refuse(403, "permission_missing", `This call needs the ${sandbox.instance.writeScope} permission.`, {
              permission: sandbox.instance.writeScope
            }),
        countWrite: () => {
          sandbox.writeCount++
        }
      }
      return route.run(ctx)
    })

  // --- Test controls --------------------------------------------------------------------------

  const state = (sandbox: ProviderSandbox) => ({
    // The app's client id only: its secret is the operator's (SVC_SANDBOX_SECRET), never shown.
    app: { client_id: sandbox.clientId },
    ...sandbox.instance.state(),
    write_count: sandbox.writeCount,
    subscriptions: [...sandbox.subscriptions].flatMap(([accountId, subscribers]) =>
      [...subscribers.keys()].map((url) => ({ account_id: accountId, callback_url: url }))
    ),
    grants: [...sandbox.grants.values()].map((grant) => ({
      id: grant.id,
      user_id: grant.userId,
      persona: grant.persona,
      accounts: grant.accountIds,
      scopes: grant.scopes,
      revoked: grant.revoked
    })),
    faults: sandbox.faults,
    counters: sandbox.counters,
    deliveries: sandbox.deliveries
  })

  const setFaults = (sandbox: ProviderSandbox, body: Record<string, unknown>, queue: ReturnType<typeof pushQueue>) => {
    const next = { ...sandbox.faults }
    const {
      throttle,
      error_rate,
      fail_next,
      timeout_ms,
      missing_permission,
      revoke_tokens,
      token_ttl_seconds,
      expire_tokens,
      rate_limit_per_second
    } = body
    const isCount = (value: unknown): value is number => typeof value === "number" && Number.isInteger(value) && value >= 0
    if (throttle !== undefined) {
      if (!isCount(throttle)) return invalid("throttle must be a count of calls (integer >= 0)")
      next.throttle = throttle
    }
    if (fail_next !== undefined) {
      if (!isCount(fail_next)) return invalid("fail_next must be a count of calls (integer >= 0)")
      next.fail_next = fail_next
    }
    if (error_rate !== undefined) {
      if (typeof error_rate !== "number" || !(error_rate >= 0 && error_rate <= 1)) return invalid("error_rate must be a number from 0 to 1")
      next.error_rate = error_rate
    }
    if (timeout_ms !== undefined) {
      if (typeof timeout_ms !== "number" || !Number.isInteger(timeout_ms) || timeout_ms < 0 || timeout_ms > 120_000) {
        return invalid("timeout_ms must be an integer from 0 to 120000")
      }
      next.timeout_ms = timeout_ms
    }
    if (missing_permission !== undefined) {
      if (typeof missing_permission !== "boolean") return invalid("missing_permission must be a boolean")
      next.missing_permission = missing_permission
    }
    if (revoke_tokens !== undefined) {
      if (typeof revoke_tokens !== "boolean") return invalid("revoke_tokens must be a boolean")
      next.revoke_tokens = revoke_tokens
    }
    if (token_ttl_seconds !== undefined) {
      if (typeof token_ttl_seconds !== "number" || !Number.isInteger(token_ttl_seconds) || token_ttl_seconds < 1 || token_ttl_seconds > 86_400) {
        return invalid("token_ttl_seconds must be an integer from 1 to 86400")
      }
      next.token_ttl_seconds = token_ttl_seconds
    }
    if (rate_limit_per_second !== undefined) {
      if (typeof rate_limit_per_second !== "number" || !Number.isInteger(rate_limit_per_second) || rate_limit_per_second < 1) {
        return invalid("rate_limit_per_second must be a positive integer")
      }
      next.rate_limit_per_second = rate_limit_per_second
    }
    if (expire_tokens !== undefined && typeof expire_tokens !== "boolean") return invalid("expire_tokens must be a boolean")
    if (error_rate !== undefined) sandbox.random = seededRandom(17)
    // A one-off action, not a lasting fault: every access token issued so far expires (refresh still works).
    if (expire_tokens === true) {
      for (const [token, record] of sandbox.tokens) sandbox.tokens.set(token, { ...record, expiresAtMs: 0 })
    }
    if (revoke_tokens === true) {
      const nowSeconds = Math.floor(Date.now() / 1000)
      for (const grant of sandbox.grants.values()) {
        if (grant.revoked) continue
        // The push goes out before the subscriptions close, as a provider tells the app its grant died.
        for (const accountId of grant.accountIds) {
          if (sandbox.subscriptions.get(accountId)?.size) queue.push(accountId, sandbox.instance.grantDeath(accountId, grant.userId, nowSeconds))
        }
        grant.revoked = true
      }
    }
    sandbox.faults = next
    return ok(next)
  }

  const patchState = (sandbox: ProviderSandbox, body: Record<string, unknown>, queue: ReturnType<typeof pushQueue>): SandboxReply => {
    const { objects, arrive } = body
    if (objects === undefined && arrive === undefined) return invalid("send {objects: [{id, ...}]} or {arrive: {kind, ...}}")
    if (objects !== undefined) {
      if (!Array.isArray(objects)) return invalid("objects must be an array")
      for (const object of objects) {
        if (!isRecord(object) || typeof object["id"] !== "string") return invalid("each object needs a string id")
      }
      for (const object of objects) {
        if (!isRecord(object)) continue
        const id = object["id"]
        if (typeof id !== "string") continue
        const refused = sandbox.instance.patch({ ...object, id }, { nowMs: Date.now(), push: queue.push })
        if (refused !== undefined) return refused
      }
    }
    if (arrive !== undefined) {
      if (!isRecord(arrive) || typeof arrive["kind"] !== "string") return invalid("arrive needs a string kind")
      return sandbox.instance.arrive(arrive, { nowMs: Date.now(), push: queue.push })
    }
    return ok(state(sandbox))
  }

  // --- Test media (issue 21 part 6) -----------------------------------------------------------

  const MB = 1024 * 1024
  /**
   * The largest answer of each type: one byte over the spec's template media limit (JPEG/PNG 5 MB,
   * MP4 16 MB, PDF 100 MB), enough to show a refusal for size and no more.
   */
  const MEDIA: Record<string, { readonly type: string; readonly maxBytes: number }> = {
    jpg: { type: "image/jpeg", maxBytes: 5 * MB + 1 },
    png: { type: "image/png", maxBytes: 5 * MB + 1 },
    mp4: { type: "video/mp4", maxBytes: 16 * MB + 1 },
    pdf: { type: "application/pdf", maxBytes: 100 * MB + 1 },
    txt: { type: "text/plain", maxBytes: 64 * 1024 }
  }
  const testMedia = (extension: string, bytes: string | null) => {
    const media = MEDIA[extension] ?? { type: "text/plain", maxBytes: 64 * 1024 }
    const size = bytes === null ? 1024 : Number(bytes)
    if (!Number.isInteger(size) || size < 0 || size > media.maxBytes) {
      return jsonResponse(invalid(`bytes must be an integer from 0 to ${media.maxBytes} for .${extension}`))
    }
    return HttpServerResponse.uint8Array(new Uint8Array(size), { contentType: media.type })
  }

  // --- Dispatch -------------------------------------------------------------------------------

  const controlRefusal = (refused: Extract<ControlCaller, { _tag: "Refused" }>) =>
    jsonResponse({
      ...refuse(refused.status, refused.code, refused.message),
      headers: refused.status === 401 ? { "www-authenticate": `Bearer realm="sandbox"` } : {}
    })

  const handle = (request: HttpServerRequest.HttpServerRequest) =>
    Effect.gen(function*() {
      const url = new URL(request.url, "http://sandbox.invalid")
      const match = /^\/sandbox\/([a-z_]+)(\/.*)?$/.exec(url.pathname)
      const kind = match === null ? undefined : kinds.get(match[1] ?? "")
      if (match === null || kind === undefined) return jsonResponse(notFound("sandbox provider"))
      const provider = kind.provider
      const path = (match[2] ?? "/").replace(/\/$/, "") || "/"
      // Test media (issue 21 part 6): `/sandbox/<provider>/media/<name>.<jpg|png|mp4|pdf|txt>?bytes=N`
      // answers N zero bytes of that type (default 1024, capped above), without a token, for media checks.
      const media = /^\/media\/[A-Za-z0-9_-]{1,64}\.(jpg|png|mp4|pdf|txt)$/.exec(path)
      if (media !== null && request.method === "GET") return testMedia(media[1] ?? "txt", url.searchParams.get("bytes"))
      const isControl = path === "/_state" || path === "/_faults"
      // Test controls name their world by credential, checked before the body is read.
      const caller = isControl ? yield* options.controlCaller(request, url) : undefined
      if (caller !== undefined && caller._tag === "Refused") return controlRefusal(caller)
      const text = request.method === "GET" || request.method === "HEAD" ? "" : yield* Effect.orElseSucceed(request.text, () => "")
      const body = parseBody(text, request.headers["content-type"] ?? "")
      if (body === undefined) return jsonResponse(invalid("the body must be JSON or a form"))
      const queue = pushQueue()

      if (path === "/oauth/authorize" && (request.method === "GET" || request.method === "POST")) {
        // The consent belongs to the world its link names (the service's hand-off signs it).
        const handle = url.searchParams.get(SANDBOX_WORLD_PARAM)
        const profileId = handle === null ? undefined : options.worlds.profileOf(handle)
        if (profileId === undefined) {
          return errorPage(400, "This consent link names no sandbox world of this service: start it from a connect hand-off.")
        }
        return consent(provider, sandboxOf(profileId, provider), request.method, url, body)
      }
      if (path === "/oauth/token" && request.method === "POST") return token(provider, body)
      if (path === "/oauth/revoke" && request.method === "POST") {
        const given = typeof body["token"] === "string" ? body["token"] : bearer(request)
        const sandbox = sandboxOfSecret(provider, given)
        const grant = sandbox === undefined ? undefined : grantOf(sandbox, given)
        if (sandbox !== undefined && grant !== undefined) revokeGrant(sandbox, grant)
        return jsonResponse(ok({ success: true }))
      }
      let reply: SandboxReply
      let sandbox: ProviderSandbox | undefined
      if (caller !== undefined) {
        sandbox = sandboxOf(caller.profileId, provider)
        if (path === "/_state" && request.method === "GET") reply = ok(state(sandbox))
        else if (path === "/_state" && request.method === "PATCH") reply = patchState(sandbox, body, queue)
        else if (path === "/_faults" && request.method === "POST") reply = setFaults(sandbox, body, queue)
        else reply = notFound(`${request.method} ${path}`)
      } else if (path.startsWith("/v1/")) {
        const accessToken = bearer(request)
        sandbox = sandboxOfSecret(provider, accessToken)
        reply = sandbox === undefined ? invalidToken : yield* api(sandbox, request, path, url, body, queue)
      } else reply = notFound(`${request.method} ${path}`)
      if (sandbox !== undefined && queue.queue.length > 0) {
        const deliveries = yield* deliver(provider, sandbox, queue.queue)
        if (isRecord(reply.body) && isControl) reply = { ...reply, body: { ...reply.body, deliveries } }
      }
      return jsonResponse(reply)
    })

  return { handle, providers: [...kinds.keys()] }
}
