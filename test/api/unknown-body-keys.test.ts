/**
 * Unknown body keys (issue 14, decision 0048). The published description says
 * `additionalProperties: false` on every request-body object but the few that are open by
 * contract or by protocol, and the service does what it says: a key a closed object does not
 * name answers 400 `validation_error` naming its path and writes nothing, on every operation;
 * the open objects take any key and drop the ones they do not name.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { Scopes } from "../../schema/scopes.ts"
import { call, OPERATOR_TOKEN, serveApp, testSettings } from "../support/app.ts"
import { defineConversion, eventTables, ingest, seedEventsProfile } from "../support/events.ts"
import { registerApp } from "../support/partner.ts"
import { seedApiKey, seedMemberSession, seedProfile } from "../support/tenancy.ts"

const JSON_TYPE = "application/json"
const FORM_TYPE = "application/x-www-form-urlencoded"

/**
 * The objects of request bodies published open (`operation media-type path`); every other object
 * of every request body is `additionalProperties: false`.
 */
const OPEN_OBJECTS = [
  // Decision 0029: custom properties and further identity traits are ignored, never stored.
  `POST /api/v1/events ${JSON_TYPE} body.properties`,
  `POST /api/v1/events ${JSON_TYPE} body.user_traits`,
  // A map of click ids by name.
  `POST /api/v1/events ${JSON_TYPE} body.click_ids`,
  // The collector's senders are copies of the snippet on the sites' pages (decision 0048).
  `POST /t/collect ${JSON_TYPE} body`,
  `POST /t/collect ${JSON_TYPE} body.attribution`,
  `POST /t/collect ${JSON_TYPE} body.properties`,
  // A provider's callback is the provider's own format, read raw and signed (decision 0057).
  `POST /hooks/{provider} ${JSON_TYPE} body`,
  // OAuth: unrecognized parameters are ignored (RFC 6749 section 3.1, RFC 7591 section 2).
  `POST /oauth/token ${FORM_TYPE} body`,
  `POST /oauth/token ${JSON_TYPE} body`,
  `POST /oauth/revoke ${FORM_TYPE} body`,
  `POST /oauth/revoke ${JSON_TYPE} body`,
  `POST /oauth/authorize/consent ${FORM_TYPE} body`,
  `POST /oauth/mcp/register ${JSON_TYPE} body`,
  `POST /oauth/mcp/authorize/sign-in ${FORM_TYPE} body`,
  `POST /oauth/mcp/authorize/decision ${FORM_TYPE} body`,
  `POST /oauth/mcp/token ${FORM_TYPE} body`,
  `POST /oauth/mcp/token ${JSON_TYPE} body`,
  // JSON-RPC: each MCP method defines its own params; tool arguments are checked per tool (decision 0103).
  `POST /mcp ${JSON_TYPE} body.params`,
  `POST /mcp ${JSON_TYPE} body.0.params`
]

type JsonSchema = Record<string, any>

/** Every object schema reachable from `schema`, with its path (`body.a.0.b` style: arrays as `0`). */
const objectsOf = (spec: JsonSchema, schema: JsonSchema | undefined, path: string, out: Array<[string, JsonSchema]>, seen: Set<string>) => {
  if (schema === undefined || typeof schema !== "object") return
  if (typeof schema.$ref === "string") {
    const name = schema.$ref.split("/").pop() ?? ""
    if (seen.has(`${name}@${path}`)) return
    seen.add(`${name}@${path}`)
    objectsOf(spec, spec.components.schemas[name], path, out, seen)
    return
  }
  if (schema.type === "object" || schema.properties !== undefined) {
    out.push([path, schema])
    for (const [key, value] of Object.entries<JsonSchema>(schema.properties ?? {})) objectsOf(spec, value, `${path}.${key}`, out, seen)
  }
  for (const member of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) objectsOf(spec, member, path, out, seen)
  if (schema.items !== undefined) objectsOf(spec, schema.items, `${path}.0`, out, seen)
}

/** An object accepts keys it does not name unless it says `additionalProperties: false`. */
const isOpen = (schema: JsonSchema) => schema.additionalProperties !== false

const requestBodies = (spec: JsonSchema) => {
  const bodies: Array<{ readonly method: string; readonly path: string; readonly contentType: string; readonly schema: JsonSchema; readonly operation: JsonSchema }> = []
  for (const [path, item] of Object.entries<Record<string, JsonSchema>>(spec.paths)) {
    for (const [method, operation] of Object.entries<JsonSchema>(item)) {
      for (const [contentType, media] of Object.entries<JsonSchema>(operation.requestBody?.content ?? {})) {
        bodies.push({ method: method.toUpperCase(), path, contentType, schema: media.schema, operation })
      }
    }
  }
  return bodies
}

const jsonCall = (path: string, method: string, headers: Record<string, string>, body: unknown) =>
  call(path, { method, headers: { ...headers, "content-type": JSON_TYPE }, body: JSON.stringify(body) })

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

/** 400 validation_error whose message names `path` as the key it does not take. */
const assertUnknownKey = (response: { readonly status: number; readonly text: string; readonly json: any }, path: string, where = path) => {
  assert.strictEqual(response.status, 400, `${where}: ${response.text}`)
  assert.strictEqual(response.json?.error?.code, "validation_error", where)
  assert.include(response.json.error.message, `${path}: Unknown key: this operation does not take it`, where)
}

layer(serveApp(testSettings()), { timeout: "180 seconds", excludeTestServices: true })("unknown body keys", (it) => {
  describe("the published description", () => {
    it.effect("every request-body object is additionalProperties: false, except the open ones of decision 0048", () =>
      Effect.gen(function*() {
        const spec = (yield* call("/api/v1/openapi.json")).json
        const open: Array<string> = []
        let closed = 0
        for (const body of requestBodies(spec)) {
          const objects: Array<[string, JsonSchema]> = []
          objectsOf(spec, body.schema, "body", objects, new Set())
          for (const [path, schema] of objects) {
            if (isOpen(schema)) open.push(`${body.method} ${body.path} ${body.contentType} ${path}`)
            else closed++
          }
        }
        assert.sameMembers(open, OPEN_OBJECTS)
        assert.isAbove(closed, 45)
      }))
  })

  describe("closed objects refuse a key they do not name", () => {
    it.effect("every /api/v1 operation whose body is closed: 400 validation_error naming body.<key>, before anything else is checked", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: Scopes, rateLimitPerMinute: 100_000 })
        const session = yield* seedMemberSession(profile, "owner")
        const app = yield* registerApp()
        const headersOf: Record<string, Record<string, string>> = {
          api_key: bearer(key),
          session: session.headers,
          app_client: { authorization: app.basic },
          operator: bearer(OPERATOR_TOKEN)
        }
        const spec = (yield* call("/api/v1/openapi.json")).json
        let checked = 0
        for (const body of requestBodies(spec)) {
          if (!body.path.startsWith("/api/v1/") || body.contentType !== JSON_TYPE) continue
          const objects: Array<[string, JsonSchema]> = []
          objectsOf(spec, body.schema, "body", objects, new Set())
          const top = objects.find(([path]) => path === "body")
          // The retired chat routes take any body and answer 410.
          if (top === undefined || isOpen(top[1])) continue
          // The first credential kind the operation takes; none for public ones (sign-in).
          const kind = ["api_key", "session", "app_client", "operator"].find((k) => (body.operation["x-auth"] ?? []).includes(k))
          const path = body.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
            name === "feature" ? "svc_attribution" : name === "profileId" ? profile.profileId : name === "workspaceId" ? profile.workspaceId : crypto.randomUUID())
          // Declared source looks for national ids before it refuses unknown keys, so its body
          // must decode otherwise; everywhere else the unknown key is the first thing refused.
          const rest = body.path === "/api/v1/partner/declared-source"
            ? { customer: { external_ref: "sweep-1" }, answer_key: "walk_in" }
            : {}
          const response = yield* jsonCall(path, body.method, { ...(kind === undefined ? {} : headersOf[kind]), "idempotency-key": crypto.randomUUID() }, {
            ...rest,
            zz_not_in_the_contract: true
          })
          assertUnknownKey(response, "body.zz_not_in_the_contract", `${body.method} ${body.path}`)
          checked++
        }
        assert.isAbove(checked, 30)
      }))

    it.effect("POST /api/v1/events: an unknown top-level key is refused and no event, customer or conversion is written", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const body = {
          event_name: "purchase",
          idempotency_key: "order-unknown-key",
          properties: { value: 10, currency: "EUR" },
          user_traits: { external_id: "cust-1" },
          value: 10
        }
        assertUnknownKey(yield* ingest(profile.key, body), "body.value")
        const counts = yield* eventTables(profile.profileId)
        assert.isDefined(counts)
        for (const [table, count] of Object.entries(counts ?? {})) assert.strictEqual(count, 0, table)
      }))

    it.effect("PUT /api/v1/profile/outcome-definitions: an unknown key inside definitions[] is refused and nothing is stored", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["goals:write", "conversions:read"] })
        const response = yield* jsonCall("/api/v1/profile/outcome-definitions", "PUT", bearer(key), {
          definitions: [{ conversion_key: "sale", name: "Sale", event_names: ["purchase"], colour: "green" }]
        })
        assertUnknownKey(response, "body.definitions.0.colour")
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM conversion_definitions WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(rows[0]?.n, 0)
      }))

    it.effect("POST /api/v1/partner/ad-referrals: an unknown key in referrals[].customer is refused and no touch is written", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["attribution:write"] })
        const response = yield* jsonCall("/api/v1/partner/ad-referrals", "POST", bearer(key), {
          referrals: [{
            idempotency_key: "ref-1",
            occurred_at: "2026-03-01T10:00:00Z",
            ad_id: "a-1",
            customer: { external_ref: "c-1", nickname: "Bob" }
          }]
        })
        assertUnknownKey(response, "body.referrals.0.customer.nickname")
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM touches WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(rows[0]?.n, 0)
      }))

    it.effect("POST /api/v1/partner/declared-source: a national id under any key stays 400 invalid_parameter; other unknown keys are validation_error", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["attribution:write"] })
        const base = { customer: { external_ref: "ds-1", email: "ds1@example.com" }, answer_key: "walk_in" }
        const declare = (body: unknown) => jsonCall("/api/v1/partner/declared-source", "POST", bearer(key), body)
        assertUnknownKey(yield* declare({ ...base, colour: "red" }), "body.colour")
        assertUnknownKey(yield* declare({ ...base, customer: { ...base.customer, nickname: "Bob" } }), "body.customer.nickname")
        const nationalId = yield* declare({ ...base, colour: "red", customer: { ...base.customer, dni: "X1234567L" } })
        assert.strictEqual(nationalId.status, 400, nationalId.text)
        assert.strictEqual(nationalId.json.error.code, "invalid_parameter")
        assert.include(nationalId.json.error.message, "body.customer.dni")
        const rows = yield* sql<{ n: number }>`
          SELECT (SELECT count(*)::int FROM customers WHERE profile_id = ${profile.profileId})
               + (SELECT count(*)::int FROM touches WHERE profile_id = ${profile.profileId}) AS n`
        assert.strictEqual(rows[0]?.n, 0)
        const clean = yield* declare(base)
        assert.strictEqual(clean.status, 201, clean.text)
      }))

    it.effect("POST /api/v1/admin/oauth-apps (operator): an unknown key is refused and no app is registered", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const name = `Unknown key app ${crypto.randomUUID()}`
        const response = yield* jsonCall("/api/v1/admin/oauth-apps", "POST", bearer(OPERATOR_TOKEN), {
          name,
          redirect_uris: ["https://partner.example/callback"],
          webhook_url: "https://partner.example/hook"
        })
        assertUnknownKey(response, "body.webhook_url")
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM oauth_apps WHERE name = ${name}`
        assert.strictEqual(rows[0]?.n, 0)
      }))
  })

  describe("open objects take any key and ignore the ones they do not name", () => {
    it.effect("POST /api/v1/events: other keys of properties, user_traits and click_ids are accepted", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedEventsProfile()
        yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
        const response = yield* ingest(profile.key, {
          event_name: "purchase",
          idempotency_key: "order-open-bags",
          properties: { value: "25.50", currency: "EUR", order_id: "A-1", items: [{ sku: "x", qty: 2 }] },
          user_traits: { external_id: "cust-open", first_name: "Ana", loyalty: { tier: "gold" } },
          click_ids: { gclid: "g-1", partner_click: "p-1" }
        })
        assert.strictEqual(response.status, 200, response.text)
        const [event] = yield* sql<{ value_amount: string; click_ids: Record<string, string> }>`
          SELECT value_amount::text AS value_amount, click_ids FROM outcome_events WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(Number(event?.value_amount), 25.5)
        assert.deepStrictEqual(event?.click_ids, { gclid: "g-1", partner_click: "p-1" })
      }))

    it.effect("POST /t/collect: other keys of the event and of attribution are accepted; the touch is stored", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["tracking:write"] })
        const created = yield* call("/api/v1/tracking/keys", { method: "POST", headers: bearer(key) })
        assert.strictEqual(created.status, 201, created.text)
        const origin = "https://shop.example.com"
        const settings = yield* jsonCall("/api/v1/tracking/settings", "PATCH", bearer(key), { allowed_origins: [origin] })
        assert.strictEqual(settings.status, 200, settings.text)
        const response = yield* call("/t/collect", {
          method: "POST",
          headers: {
            "content-type": "text/plain",
            origin,
            "user-agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"
          },
          body: JSON.stringify({
            tracking_key: created.json.data.key,
            anonymous_id: "anon_0123456789",
            type: "page_view",
            url: "https://shop.example.com/",
            attribution: { utm_source: "newsletter", li_fat_id: "x-1" },
            snippet_version: 7
          })
        })
        assert.strictEqual(response.status, 204, response.text)
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM touches WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(rows[0]?.n, 1)
      }))

    it.effect("POST /oauth/mcp/register: client metadata the service does not read is accepted (RFC 7591 section 2)", () =>
      Effect.gen(function*() {
        const response = yield* jsonCall("/oauth/mcp/register", "POST", {}, {
          redirect_uris: ["https://agent.example/callback"],
          client_name: "Agent with extra metadata",
          client_uri: "https://agent.example",
          software_id: "agent-1",
          contacts: ["ops@agent.example"]
        })
        assert.strictEqual(response.status, 201, response.text)
        assert.notProperty(response.json, "software_id")
      }))
  })
})
