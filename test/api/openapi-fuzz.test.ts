/**
 * Schema-driven fuzzing of every operation of `/api/v1/openapi.json`: valid and invalid path
 * parameters, query parameters and bodies generated from the published schemas (seeded,
 * bounded), each sent with a credential holding every scope and once more with none. Every
 * answer must be no 5xx (beyond the 503s an operation documents, never `database_unavailable`
 * on a healthy database), a documented status whose body matches the published schema, the
 * error envelope with `X-Request-Id` on `/api/v1`, and no success for an input the schemas
 * refuse or a missing credential. Afterwards the process still answers `/healthz`.
 *
 * FUZZ_SEED=<int> replays another run (the seed is printed); FUZZ_RUNS=<n> sets the examples
 * per operation (a third valid, the rest invalid).
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { catalogue } from "../../schema/errors.ts"
import { McpGrants, Scopes, scopesOfMcpGrants } from "../../schema/scopes.ts"
import { call, serveApp, TestServer, testSettings } from "../support/app.ts"
import {
  type Case,
  casesOf,
  Generator,
  type Hints,
  isNode,
  type Node,
  type Operation,
  operationsOf,
  seedFor,
  SpecValidator,
  urlOf
} from "../support/fuzz.ts"
import { type Fixture, type Kind, makeFixture } from "../support/fuzz-fixture.ts"

const envInt = (name: string, fallback: number) => {
  const value = process.env[name]
  if (value === undefined || value === "") return fallback
  const parsed = Number(value)
  if (!Number.isSafeInteger(parsed)) throw new Error(`${name} must be an integer, got ${value}`)
  return parsed
}

const SEED = envInt("FUZZ_SEED", 20_261_126)
/**
 * Examples per operation. The default run's 24 (8 valid, 16 invalid) over 247 operations is about
 * 11,000 requests, ~25 s under load on 2 cores (60 took 65 s); `npm run test:fuzz` runs 120 for a
 * deeper search of every operation's inputs.
 */
const RUNS = envInt("FUZZ_RUNS", 24)
/** Requests in flight at once: overlaps database round trips without starving the in-process server. */
const CONCURRENCY = 4
const REQUEST_TIMEOUT_MS = 20_000
/** Distinct failure kinds reported in full; the rest one line each. */
const REPORTED = 20
/** FUZZ_VERBOSE=1 prints, per operation, the statuses its credentialed requests got (is the fuzzing reaching the handlers?). */
const VERBOSE = process.env["FUZZ_VERBOSE"] === "1"

const DAY = 86_400_000
const isoDay = (offsetDays: number) => new Date(Date.now() + offsetDays * DAY).toISOString().slice(0, 10)
const isoTime = (offsetDays: number) => new Date(Date.now() + offsetDays * DAY).toISOString()

/**
 * Values for parameters and fields of these names: the fixture's real ids, and values of the
 * shape the handlers check beyond the published schema (which says only "string" for most), so
 * that valid inputs get past those checks into the handlers.
 */
const hintsFor = (
  fixture: Fixture,
  trackingKey: string | undefined,
  /** Ids seen in earlier answers, by path parameter name, for this operation's path. */
  seenIds: Readonly<Record<string, ReadonlyArray<string>>>
): Hints => {
  const byName: Record<string, ReadonlyArray<string>> = {
    profileId: [fixture.profileId],
    profile_id: [fixture.profileId],
    workspaceId: [fixture.workspaceId],
    workspace_id: [fixture.workspaceId],
    owner_workspace_id: [fixture.workspaceId],
    appId: [fixture.app.id],
    keyId: [fixture.apiKeyId],
    userId: [fixture.userId],
    client_id: [fixture.app.clientId],
    key: trackingKey === undefined ? [] : [trackingKey],
    tracking_key: trackingKey === undefined ? [] : [trackingKey],
    feature: ["svc_attribution"],
    email: ["person@fuzz.example", `owner-${fixture.userId.slice(0, 8)}@fuzz.example`],
    phone: ["+14155550123", "+34600000000"],
    currency: ["EUR", "USD"],
    reporting_currency: ["EUR", "USD"],
    time_zone: ["UTC", "Europe/Madrid"],
    start: [isoDay(-7), isoDay(-30)],
    end: [isoDay(0), isoDay(-1)],
    days: ["1", "7", "30"],
    limit: ["1", "10", "50"],
    offset: ["0", "5"],
    occurred_at: [isoTime(-1), isoTime(0)],
    answered_at: [isoTime(-1)],
    as_of: [isoTime(0)],
    snooze_until: [isoTime(2)],
    expires_at: [isoTime(30)],
    url: ["https://shop.example/landing?utm_source=fuzz"],
    landing_url: ["https://shop.example/landing"],
    referrer: ["https://search.example/"],
    redirect_uris: ["https://partner.example/callback", "http://127.0.0.1:8765/callback"],
    redirect_uri: ["https://partner.example/callback"],
    allowed_return_origins: ["https://partner.example"],
    allowed_origins: ["https://shop.example"],
    hostname: ["track.shop.example"],
    cookie_domain: [".shop.example"],
    amount: ["19.99", "100"],
    value: ["19.99"],
    conversion_key: ["purchase", "lead"],
    event_name: ["purchase", "page_view"],
    event_names: ["purchase"],
    type: ["page_view"],
    anonymous_id: [crypto.randomUUID()],
    customer_key: ["cust-1"],
    external_id: ["cust-1"],
    external_ref: ["merchant-1"],
    scopes: Scopes,
    wa_id: ["15551234567"],
    session_id: ["sess_fuzz_0001"],
    idempotency_key: [`fuzz-${fixture.profileId.slice(0, 8)}`],
    shop: ["fuzz-shop"],
    grant_type: ["client_credentials"],
    response_type: ["code"],
    code_challenge_method: ["S256"]
  }
  return (name, description) => {
    const strong = [...(name === undefined ? [] : [...(byName[name] ?? []), ...(seenIds[name] ?? [])])]
    if (name !== undefined && strong.length === 0 && /(^id$|Id$|_id$)/.test(name)) strong.push(crypto.randomUUID())
    // Words of the description ("One of paid, refunded", "1 to 200", "`code`") are often the values.
    const weak = (description ?? "").split(/[,:;()`]|\bor\b|\bOne of\b|\bdefault\b/).map((part) => part.trim())
      .filter((part) => /^[A-Za-z0-9_.:+-]{1,40}$/.test(part))
    for (const number of (description ?? "").match(/\b\d+\b/g) ?? []) weak.push(number)
    return { strong: [...new Set(strong)], weak: [...new Set(weak)] }
  }
}

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/** One request; a network error or a timeout is an answer of status 0 (itself a failure). */
const send = (url: string, init: RequestInit) =>
  Effect.flatMap(TestServer, ({ url: base }) =>
    Effect.promise(async (): Promise<Answer> => {
      try {
        const response = await fetch(`${base}${url}`, { ...init, redirect: "manual", signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
        return { status: response.status, headers: response.headers, text: await response.text() }
      } catch (error) {
        return { status: 0, headers: new Headers(), text: String(error) }
      }
    }))

interface Failure {
  readonly check: string
  readonly operation: string
  readonly status: number
  readonly code: string
  readonly category: string
  readonly detail: string
  readonly request: string
  readonly excerpt: string
}

/** `text` cut to `length`, with NUL, other controls and lone surrogates shown as `\uXXXX`. */
const clip = (text: string, length: number) => {
  const shown = text.replace(
    /[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`
  )
  return shown.length <= length ? shown : `${shown.slice(0, length)}…(${text.length} chars)`
}

const mediaTypeOf = (headers: Headers) => (headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? ""

/** The response object documented for a status: exact, then `4XX`-style, then `default`. */
const documented = (operation: Operation, status: number): Node | undefined => {
  for (const key of [String(status), `${Math.floor(status / 100)}XX`, "default"]) {
    const response = operation.responses[key]
    if (isNode(response)) return response
  }
  return undefined
}

/** Catalogued 503 codes (other than a lost database) whose meaning the operation's 503 documents. */
const documented503 = (operation: Operation): ReadonlySet<string> => {
  const response = operation.responses["503"]
  const description = isNode(response) && typeof response["description"] === "string" ? response["description"] : ""
  return new Set(
    catalogue
      .filter((entry) => entry.status === 503 && entry.code !== "database_unavailable" && description.includes(entry.description))
      .map((entry) => entry.code)
  )
}

/** Every check of one answer; the failures it shows. */
const judge = (
  validator: SpecValidator,
  operation: Operation,
  testCase: Case,
  credential: Kind | undefined,
  answer: Answer
): ReadonlyArray<Omit<Failure, "category" | "request" | "operation">> => {
  const failures: Array<Omit<Failure, "category" | "request" | "operation">> = []
  const { status, headers, text } = answer
  const media = mediaTypeOf(headers)
  let json: { readonly value: unknown } | undefined
  if (media.includes("json") && text.length > 0) {
    try {
      json = { value: JSON.parse(text) }
    } catch {
      json = undefined
    }
  }
  const errorNode = json !== undefined && isNode(json.value) && isNode(json.value["error"]) ? json.value["error"] : undefined
  const code = typeof errorNode?.["code"] === "string" ? errorNode["code"] : ""
  const fail = (check: string, detail = "") => failures.push({ check, status, code, detail, excerpt: clip(text, 300) })

  if (status === 0) {
    fail("no answer (connection error or timeout)", text)
    return failures
  }
  if (status >= 500 && !(status === 503 && documented503(operation).has(code))) fail("5xx answer")
  const response = documented(operation, status)
  if (response === undefined) fail("status not documented for the operation")
  const onApi = operation.path.startsWith("/api/v1/")
  const requestId = headers.get("x-request-id")
  if (onApi && requestId === null) fail("no X-Request-Id header")
  if (onApi && status >= 400) {
    if (errorNode === undefined) fail("error body is not the {\"error\":{...}} envelope")
    else {
      if (typeof errorNode["code"] !== "string" || typeof errorNode["message"] !== "string") fail("envelope without code or message")
      if (errorNode["status"] !== status) fail("envelope status differs from the HTTP status", `error.status=${String(errorNode["status"])}`)
      if (errorNode["request_id"] !== requestId) fail("envelope request_id differs from X-Request-Id")
    }
  }
  if (response !== undefined) {
    const content = isNode(response["content"]) ? response["content"] : undefined
    if (content !== undefined && Object.keys(content).length > 0 && text.length > 0) {
      const entry = content[media]
      if (!isNode(entry)) fail("content type not documented for the status", `got ${media || "(none)"}, documented ${Object.keys(content).join(", ")}`)
      else if (media === "application/json") {
        const schema = isNode(entry["schema"]) ? entry["schema"] : {}
        if (json === undefined) fail("body is not JSON although application/json")
        else {
          const mismatch = validator.check(schema, json.value)
          if (mismatch !== undefined) fail("body does not match the published response schema", `${mismatch.where}: ${mismatch.message}`)
        }
      }
    }
    const documentedHeaders = isNode(response["headers"]) ? response["headers"] : {}
    for (const [name, header] of Object.entries(documentedHeaders)) {
      if (isNode(header) && header["required"] === true && headers.get(name) === null && status !== 0) {
        fail("documented required header missing", name)
      }
    }
  }
  if (status >= 200 && status < 300) {
    if (testCase.breaks) fail("success for an input the published schema refuses")
    if (credential === undefined && operation.auth.length > 0 && !operation.anonymousAlternative) fail("success without a credential")
  }
  return failures
}

/** The scopes a user token can hold: what its MCP grants give. */
const userTokenScopes: ReadonlySet<string> = new Set(scopesOfMcpGrants(McpGrants))

/**
 * The credential kind a case uses: one the operation accepts (`x-auth`) and that can hold its
 * scopes (`x-scopes`: user tokens hold only what MCP grants give); cases take turns among them.
 */
const credentialOf = (operation: Operation, testCase: Case): Kind | undefined => {
  const accepted = operation.auth.filter((kind): kind is Kind =>
    kind === "api_key" || kind === "user_token" || kind === "app_client" || kind === "session" || kind === "operator"
  )
  const scopes = Array.isArray(operation.node["x-scopes"]) ? operation.node["x-scopes"].filter((scope) => typeof scope === "string") : []
  const able = accepted.filter((kind) => kind !== "user_token" || scopes.length === 0 || scopes.some((scope) => userTokenScopes.has(scope)))
  const kinds = able.length === 0 ? accepted : able
  return kinds.length === 0 ? undefined : kinds[testCase.credential % kinds.length]
}

/**
 * Operations that can take away what the shared fixture's credentials stand on (delete, revoke,
 * rotate, withdraw, change members, add-ons, MCP settings or the app) get a fixture of their own.
 * Other writes share one profile, so later operations find what earlier ones created. A route
 * missed here only costs coverage: later requests then answer 401/404, which fail no check.
 */
const needsOwnFixture = (operation: Operation) =>
  operation.method === "delete" ||
  /\/(revoke|rotate[^/]*|withdraw|adopt|entitlements|members|mcp-settings)(\/|$)|^\/api\/v1\/admin\/(workspaces|oauth-apps\/\{)|\/api-keys\/\{|\/sessions\/current/
    .test(operation.path)

/**
 * Ids of resources created or listed so far, by the path of the collection they were answered
 * on: `/api/v1/goals/definitions/{id}` draws its `id`s from what `/api/v1/goals/definitions` answered.
 */
class SeenIds {
  readonly #byCollection = new Map<string, Set<string>>()
  /** The shared fixture's own ids: a destructive operation must not be handed them. */
  readonly #protected: ReadonlySet<string>

  constructor(shared: Fixture) {
    this.#protected = new Set([shared.app.id, shared.profileId, shared.workspaceId, shared.apiKeyId, shared.userId])
  }

  record(operation: Operation, status: number, text: string) {
    if (status < 200 || status >= 300 || !operation.path.startsWith("/api/v1/")) return
    let data: unknown
    try {
      const body: unknown = JSON.parse(text)
      data = isNode(body) ? body["data"] : undefined
    } catch {
      return
    }
    const collection = operation.path.replace(/\/\{[^}]+\}$/, "")
    const ids = this.#byCollection.get(collection) ?? new Set<string>()
    for (const item of Array.isArray(data) ? data : [data]) {
      const id = isNode(item) ? item["id"] : undefined
      if (typeof id === "string" && !this.#protected.has(id) && ids.size < 20) ids.add(id)
    }
    this.#byCollection.set(collection, ids)
  }

  forPath(path: string): Record<string, ReadonlyArray<string>> {
    const out: Record<string, ReadonlyArray<string>> = {}
    for (const match of path.matchAll(/\/\{([^}]+)\}/g)) {
      const name = match[1]
      if (name === undefined) continue
      out[name] = [...(this.#byCollection.get(path.slice(0, match.index)) ?? [])]
    }
    return out
  }
}

layer(serveApp(testSettings()), { timeout: "180 seconds", excludeTestServices: true })("OpenAPI-driven fuzzing", (it) => {
  it.effect(
    "every operation: no 5xx, documented statuses and bodies, the error envelope, refused invalid input",
    () =>
      Effect.gen(function*() {
        const started = Date.now()
        const specAnswer = yield* call("/api/v1/openapi.json")
        assert.strictEqual(specAnswer.status, 200)
        const spec: unknown = specAnswer.json
        if (!isNode(spec)) throw new Error("openapi.json is not an object")
        const operations = operationsOf(spec)
        const validator = new SpecValidator(spec)

        const shared = yield* makeFixture
        const tracking = yield* call("/api/v1/tracking/keys", {
          method: "POST",
          headers: { ...shared.headers.api_key, "content-type": "application/json" }
        })
        const seenIds = new SeenIds(shared)
        const trackingKey = tracking.status < 300 && typeof tracking.json?.data?.key === "string" ? String(tracking.json.data.key) : undefined

        const validRuns = Math.ceil(RUNS / 3)
        const invalidRuns = RUNS - validRuns
        console.log(
          `openapi fuzz: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} (${validRuns} valid + ${invalidRuns} invalid per operation), ${operations.length} operations`
        )

        const failures: Array<Failure> = []
        let requests = 0
        let validBroken = 0
        const slow: Array<[string, number]> = []
        const statuses = new Map<string, Map<string, number>>()
        const refusals = new Map<string, string>()
        for (const operation of operations) {
          const opStarted = Date.now()
          const fixture = needsOwnFixture(operation) ? yield* makeFixture : shared
          const generator = new Generator(spec, hintsFor(fixture, trackingKey, seenIds.forPath(operation.path)))
          const seed = seedFor(SEED, operation.label)
          // A person's credential names the profile of a profile route with ?profile_id= (an API key's is the same profile).
          const extra: Record<string, string> = {}
          const person = operation.auth.some((kind) => kind === "session" || kind === "user_token")
          if (person && operation.grain === "profile" && !operation.params.some((param) => param.name === "profile_id")) {
            extra["profile_id"] = fixture.profileId
          }
          const { valid, invalid } = casesOf(generator, validator, operation, extra)
          const examples = [
            ...fc.sample(valid, { seed, numRuns: validRuns }),
            ...fc.sample(invalid, { seed: seed ^ 0x5bd1e995, numRuns: invalidRuns })
          ]
          validBroken += examples.filter((example) => example.kind === "valid" && example.breaks).length
          yield* Effect.forEach(
            examples,
            (testCase) =>
              Effect.gen(function*() {
                const url = urlOf(operation, testCase)
                const kind = credentialOf(operation, testCase)
                // With the credential, then (on operations that need one) without any.
                for (const credential of kind === undefined ? [undefined] : [kind, undefined]) {
                  const headers: Record<string, string> = credential === undefined ? {} : { ...fixture.headers[credential] }
                  if (testCase.body !== undefined) headers["content-type"] = testCase.body.contentType
                  if (operation.idempotency !== "none" && testCase.idempotencyKey) headers["idempotency-key"] = crypto.randomUUID()
                  const answer = yield* send(url, {
                    method: operation.method.toUpperCase(),
                    headers,
                    ...(testCase.body === undefined ? {} : { body: testCase.body.text })
                  })
                  requests++
                  if (credential !== undefined) seenIds.record(operation, answer.status, answer.text)
                  if (credential !== undefined || kind === undefined) {
                    const seen = statuses.get(operation.label) ?? new Map<string, number>()
                    const key = `${testCase.kind === "valid" ? "v" : "i"}${answer.status}`
                    seen.set(key, (seen.get(key) ?? 0) + 1)
                    statuses.set(operation.label, seen)
                    if (VERBOSE && testCase.kind === "valid" && answer.status === 400 && !refusals.has(operation.label)) {
                      refusals.set(operation.label, `${clip(url, 150)} ${clip(testCase.body?.text ?? "", 150)} → ${clip(answer.text, 200)}`)
                    }
                  }
                  const request = `${credential ?? "no credential"} ${operation.method.toUpperCase()} ${clip(url, 220)}${
                    testCase.body === undefined ? "" : ` body=${clip(testCase.body.text, 220)}`
                  }`
                  const what = testCase.mutation === undefined
                    ? "valid input"
                    : `${testCase.mutation.where.split(/[.[]/)[0] ?? ""}: ${testCase.mutation.what}`
                  const category = `${credential === undefined && kind !== undefined ? "no credential, " : ""}${what}`
                  for (const failure of judge(validator, operation, testCase, credential, answer)) {
                    failures.push({ ...failure, operation: operation.label, category, request: `${request}  [${testCase.mutation?.where ?? "valid"}]` })
                  }
                }
              }),
            { concurrency: CONCURRENCY, discard: true }
          )
          slow.push([operation.label, Date.now() - opStarted])
        }

        const health = yield* call("/healthz")
        const elapsed = ((Date.now() - started) / 1000).toFixed(1)
        slow.sort((a, b) => b[1] - a[1])
        console.log(
          `openapi fuzz: ${operations.length} operations × ${RUNS} examples, ${requests} requests in ${elapsed}s; ` +
            `slowest: ${slow.slice(0, 5).map(([label, ms]) => `${label} ${ms}ms`).join(", ")}` +
            (validBroken > 0 ? `; ${validBroken} generated "valid" inputs did not conform (generator limits)` : "")
        )

        if (VERBOSE) {
          for (const [label, seen] of statuses) {
            console.log(`  ${label}: ${[...seen].sort().map(([key, count]) => `${key}×${count}`).join(" ")}`)
            const refusal = refusals.get(label)
            if (refusal !== undefined) console.log(`      a valid input refused: ${refusal}`)
          }
        }
        const neverOk = [...statuses].filter(([, seen]) => ![...seen.keys()].some((key) => /^[vi]2/.test(key))).map(([label]) => label)
        console.log(`openapi fuzz: ${neverOk.length} operations never answered 2xx to the fuzzer`)

        // One entry per kind of failure: what failed, how, on which input category; operations listed.
        // Documentation mismatches are about one operation whatever the input; the rest about a kind of input.
        const perOperation = (check: string) =>
          check.startsWith("body does not match") || check.startsWith("status not documented") || check.startsWith("content type") ||
          check.startsWith("documented required header")
        const groups = new Map<string, { readonly first: Failure; readonly operations: Set<string>; count: number }>()
        for (const failure of failures) {
          const own = perOperation(failure.check)
          const key = [failure.check, failure.status, failure.code, own ? failure.operation : failure.category, own ? failure.detail : ""]
            .join(" | ")
          const group = groups.get(key)
          if (group === undefined) groups.set(key, { first: failure, operations: new Set([failure.operation]), count: 1 })
          else {
            group.operations.add(failure.operation)
            group.count++
          }
        }
        const ordered = [...groups.values()].sort((a, b) =>
          Number(b.first.status >= 500) - Number(a.first.status >= 500) || b.operations.size - a.operations.size || b.count - a.count
        )
        const lines = ordered.slice(0, REPORTED).map(({ first, operations: ops, count }, index) =>
          [
            `${index + 1}. ${first.check}: ${first.status}${first.code === "" ? "" : ` ${first.code}`}${
              perOperation(first.check) ? "" : ` on ${first.category}`
            } (${count}× on ${ops.size} operation${ops.size === 1 ? "" : "s"})`,
            first.detail === "" ? undefined : `   detail:    ${first.detail}`,
            `   operation: ${first.operation}${ops.size > 1 ? `  (also: ${[...ops].filter((op) => op !== first.operation).slice(0, 6).join("; ")}${ops.size > 7 ? "; …" : ""})` : ""}`,
            `   request:   ${first.request}`,
            `   answer:    ${first.excerpt}`
          ].filter((line) => line !== undefined).join("\n")
        )
        const rest = ordered.slice(REPORTED).map(({ first, operations: ops, count }) =>
          `- ${first.check}: ${first.status} ${first.code}${perOperation(first.check) ? "" : ` on ${first.category}`}${
            first.detail === "" ? "" : ` (${first.detail})`
          }: ${first.operation}${ops.size > 1 ? ` +${ops.size - 1} more` : ""} (${count}×)`
        )
        const report = failures.length === 0
          ? ""
          : `${groups.size} distinct failure kinds (${failures.length} failing answers) with FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}:\n\n${lines.join("\n\n")}${
            rest.length === 0 ? "" : `\n\nand ${rest.length} more kinds:\n${rest.join("\n")}`
          }`

        assert.strictEqual(health.status, 200, "the process no longer answers /healthz after the run")
        assert.isAbove(requests, operations.length)
        if (failures.length > 0) assert.fail(report)
      }),
    300_000
  )
})
