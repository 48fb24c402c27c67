/**
 * The agent surface `POST /mcp` (decision 0103) over real HTTP: the MCP handshake, tools over the
 * same services as /api/v1 (answers compared with the HTTP routes), scope and writeback refusals
 * as tool errors, session and protocol-version rules, and the transport's error codes.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call, serveApp, testSettings } from "../support/app.ts"
import { defineConversion, ingest, seedEventsProfile } from "../support/events.ts"
import { drain, sansAsOf } from "../support/analytics.ts"
import { seedCompletedPrePost } from "../support/experiments.ts"
import { seedApiKey, seedMemberSession, type SeededProfile } from "../support/tenancy.ts"

type Session = Effect.Success<ReturnType<typeof seedMemberSession>>

const ACCEPT = "application/json, text/event-stream"

/** A user token minted by the person the way an agent's owner does (POST /api/v1/me/mcp-tokens). */
const mintToken = (person: Session, body: Record<string, unknown>) =>
  Effect.map(
    call("/api/v1/me/mcp-tokens", {
      method: "POST",
      headers: { ...person.headers, "content-type": "application/json" },
      body: JSON.stringify(body)
    }),
    (minted) => {
      assert.strictEqual(minted.status, 201, minted.text)
      return String(minted.json.data.token)
    }
  )

const post = (token: string | undefined, body: unknown, headers: Record<string, string> = {}) =>
  call("/mcp", {
    method: "POST",
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      "content-type": "application/json",
      accept: ACCEPT,
      ...headers
    },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

/** `initialize` and `notifications/initialized`: the session id to send afterwards. */
const initialize = Effect.fn("test.mcpInitialize")(function*(token: string, protocolVersion = "2025-06-18") {
  const opened = yield* post(token, {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion, capabilities: {}, clientInfo: { name: "test-agent", version: "1.0.0" } }
  })
  assert.strictEqual(opened.status, 200, opened.text)
  const sessionId = opened.headers.get("mcp-session-id")
  assert.isString(sessionId)
  const initialized = yield* post(token, { jsonrpc: "2.0", method: "notifications/initialized" }, {
    "mcp-session-id": sessionId ?? ""
  })
  assert.strictEqual(initialized.status, 202)
  assert.strictEqual(initialized.text, "")
  return { sessionId: sessionId ?? "", opened }
})

let nextId = 1
const rpc = (token: string, sessionId: string, method: string, params?: Record<string, unknown>) =>
  post(token, { jsonrpc: "2.0", id: nextId++, method, ...(params === undefined ? {} : { params }) }, {
    "mcp-session-id": sessionId,
    "mcp-protocol-version": "2025-06-18"
  })

const callTool = (token: string, sessionId: string, name: string, args: Record<string, unknown>) =>
  Effect.map(rpc(token, sessionId, "tools/call", { name, arguments: args }), (answer) => {
    assert.strictEqual(answer.status, 200, answer.text)
    assert.isUndefined(answer.json.error, answer.text)
    return answer.json.result
  })

/** A profile with the "sale" definition, an events key, its owner, and the owner's token with `grants`. */

const fixture = Effect.fn("test.mcpFixture")(function*(grants: ReadonlyArray<string>, tokenOptions: Record<string, unknown> = {}) {
  const profile = yield* seedEventsProfile()
  yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
  const owner = yield* seedMemberSession(profile, "owner")
  const token = yield* mintToken(owner, { grants, ...tokenOptions })
  return { profile, owner, token }
})

const setMcpSettings = (profile: SeededProfile, owner: Session, settings: { pii_mode: string; mcp_writeback_enabled: boolean }) =>
  Effect.map(
    call(`/api/v1/workspaces/${profile.workspaceId}/mcp-settings`, {
      method: "PUT",
      headers: { ...owner.headers, "content-type": "application/json" },
      body: JSON.stringify(settings)
    }),
    (response) => assert.strictEqual(response.status, 200, response.text)
  )

/** Every tool, in the order tools/list answers them. */
const ALL_TOOLS = [
  "list_workspaces",
  "list_profiles",
  "analytics_overview",
  "analytics_timeseries",
  "list_campaigns",
  "list_conversions",
  "conversion_journey",
  "list_recommendations",
  "experiment_results",
  "conversion_sync_wiring",
  "list_export_deliveries",
  "upsert_goal_definition",
  "dismiss_recommendation"
]

/** What the mcp:read grant (analytics, campaigns, conversions) lets a token call. */
const READ_TOOLS = ALL_TOOLS.slice(0, 9)

const definitionsOf = (profileId: string, key: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ name: string }>`SELECT name FROM conversion_definitions WHERE profile_id = ${profileId} AND conversion_key = ${key}`)

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("POST /mcp", (it) => {
  describe("handshake and read tools", () => {
    it.effect("initialize, tools/list, and tools/call answering what the HTTP routes answer for ingested data", () =>
      Effect.gen(function*() {
        const { profile, token } = yield* fixture(["mcp:read"])
        const { sessionId, opened } = yield* initialize(token)
        assert.strictEqual(opened.json.jsonrpc, "2.0")
        assert.strictEqual(opened.json.id, 0)
        assert.strictEqual(opened.json.result.protocolVersion, "2025-06-18")
        assert.deepStrictEqual(opened.json.result.capabilities, { tools: { listChanged: false } })
        assert.strictEqual(opened.json.result.serverInfo.name, "attribution-service")

        const pong = yield* rpc(token, sessionId, "ping")
        assert.deepStrictEqual(pong.json, { jsonrpc: "2.0", id: pong.json.id, result: {} })

        const listed = yield* rpc(token, sessionId, "tools/list")
        assert.strictEqual(listed.status, 200)
        const tools: ReadonlyArray<any> = listed.json.result.tools
        // mcp:read holds no exports:read, goals:write or campaigns:apply: the wiring, deliveries and write tools are not listed.
        assert.deepStrictEqual(tools.map((tool) => tool.name), READ_TOOLS)
        const conversionsTool = tools.find((tool) => tool.name === "list_conversions")
        assert.strictEqual(conversionsTool.inputSchema.type, "object")
        assert.deepStrictEqual(conversionsTool.inputSchema.required, ["profile_id"])
        assert.strictEqual(conversionsTool.inputSchema.additionalProperties, false)
        assert.strictEqual(conversionsTool.inputSchema.properties.limit.type, "string")
        assert.strictEqual(conversionsTool.annotations.readOnlyHint, true)

        const ingested = yield* ingest(profile.key, {
          event_name: "purchase",
          idempotency_key: `order-${crypto.randomUUID()}`,
          occurred_at: new Date().toISOString(),
          properties: { value: 42.5, currency: "EUR" },
          user_traits: { external_id: "cust-mcp" }
        })
        assert.strictEqual(ingested.status, 200, ingested.text)
        const conversionId = ingested.json.data.conversion_id

        const conversions = yield* callTool(token, sessionId, "list_conversions", { profile_id: profile.profileId })
        assert.strictEqual(conversions.isError, false)
        assert.strictEqual(conversions.structuredContent.data.length, 1)
        assert.strictEqual(conversions.structuredContent.data[0].conversion_id, conversionId)
        assert.deepStrictEqual(JSON.parse(conversions.content[0].text), conversions.structuredContent)
        const viaHttp = yield* call(`/api/v1/conversions?profile_id=${profile.profileId}`, {
          headers: { authorization: `Bearer ${token}` }
        })
        assert.strictEqual(viaHttp.status, 200)
        assert.deepStrictEqual(conversions.structuredContent, viaHttp.json)

        // The outcome reaches the rollups in the background: both reads below must see it.
        yield* drain
        const overview = yield* callTool(token, sessionId, "analytics_overview", { profile_id: profile.profileId, days: "7" })
        assert.strictEqual(overview.isError, false, JSON.stringify(overview))
        const overviewViaHttp = yield* call(`/api/v1/overview?profile_id=${profile.profileId}&days=7`, {
          headers: { authorization: `Bearer ${token}` }
        })
        assert.deepStrictEqual(sansAsOf(overview.structuredContent), sansAsOf(overviewViaHttp.json))

        const profiles = yield* callTool(token, sessionId, "list_profiles", {})
        assert.deepStrictEqual(profiles.structuredContent.data.map((row: any) => row.profile_id), [profile.profileId])
        assert.strictEqual(profiles.structuredContent.data[0].workspace_role, "owner")
        const workspaces = yield* callTool(token, sessionId, "list_workspaces", {})
        assert.deepStrictEqual(workspaces.structuredContent.data.map((row: any) => row.workspace_id), [profile.workspaceId])
      }))

    it.effect("experiment_results answers what GET /api/v1/experiments/{id}/results answers; a draft is invalid_state", () =>
      Effect.gen(function*() {
        const { profile, token } = yield* fixture(["mcp:read"])
        const { sessionId } = yield* initialize(token)
        const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)
        const { key } = yield* seedApiKey(profile, { scopes: ["analytics:read", "campaigns:apply"], rateLimitPerMinute: 1000 })
        const create = (name: string) =>
          call("/api/v1/experiments", {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: JSON.stringify({
              name,
              kind: "audience_holdout",
              metric: { conversion_key: "sale", measure: "count" },
              window: { start: day(-10), end: day(-2) },
              holdout_fraction: 0.1
            })
          })
        const draft = yield* create("Draft")
        assert.strictEqual(draft.status, 201, draft.text)
        const refused = yield* callTool(token, sessionId, "experiment_results", { profile_id: profile.profileId, id: draft.json.data.id })
        assert.strictEqual(refused.isError, true)
        assert.strictEqual(refused.structuredContent.error.code, "invalid_state")
        assert.strictEqual(refused.structuredContent.error.status, 409)
        const started = yield* call(`/api/v1/experiments/${draft.json.data.id}/start`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}` }
        })
        assert.strictEqual(started.status, 200, started.text)
        const viaTool = yield* callTool(token, sessionId, "experiment_results", { profile_id: profile.profileId, id: draft.json.data.id })
        assert.strictEqual(viaTool.isError, false, JSON.stringify(viaTool))
        const viaHttp = yield* call(`/api/v1/experiments/${draft.json.data.id}/results`, { headers: { authorization: `Bearer ${key}` } })
        assert.strictEqual(viaHttp.status, 200, viaHttp.text)
        assert.deepStrictEqual(viaTool.structuredContent, viaHttp.json)
        assert.strictEqual(viaTool.structuredContent.data.status, "completed")
        assert.deepStrictEqual(viaTool.structuredContent.data.insufficient_data, { reason: viaHttp.json.data.insufficient_data.reason })
      }))

    it.effect("analytics_overview and list_campaigns take calibrated: the same calibration as the REST reads with ?calibrated=true, the modelled figures unchanged", () =>
      Effect.gen(function*() {
        const { profile, token } = yield* fixture(["mcp:read"])
        const { sessionId } = yield* initialize(token)
        const { key } = yield* seedApiKey(profile, { scopes: ["analytics:read", "campaigns:apply"], rateLimitPerMinute: 1000 })
        const id = yield* seedCompletedPrePost(profile.profileId, key)
        // The seeded rows reach the rollups in the background: both overview reads below must see them.
        yield* drain
        const results = (yield* call(`/api/v1/experiments/${id}/results`, { headers: { authorization: `Bearer ${key}` } })).json.data
        assert.ok(results.incremental_conversions !== null, JSON.stringify(results))
        const rest = (path: string) => call(`${path}&profile_id=${profile.profileId}`, { headers: { authorization: `Bearer ${token}` } })

        const overview = yield* callTool(token, sessionId, "analytics_overview", { profile_id: profile.profileId, days: "60", calibrated: "true" })
        assert.strictEqual(overview.isError, false, JSON.stringify(overview))
        const overviewHttp = yield* rest("/api/v1/overview?days=60&calibrated=true")
        assert.strictEqual(overviewHttp.status, 200, overviewHttp.text)
        // The same answer but for `meta.as_of`: the rollups may move on between two reads.
        assert.deepStrictEqual(sansAsOf(overview.structuredContent), sansAsOf(overviewHttp.json))
        const calibration = overview.structuredContent.data.calibration
        assert.deepStrictEqual(calibration.map((f: any) => [f.campaign, f.experiment_id, f.kind]), [["cmp_t", id, "pre_post"]])
        assert.deepStrictEqual(calibration[0].incremental_conversions, results.incremental_conversions)
        // Without the flag: no calibration, the same modelled figures.
        const plain = yield* callTool(token, sessionId, "analytics_overview", { profile_id: profile.profileId, days: "60" })
        assert.notProperty(plain.structuredContent.data, "calibration")
        const { calibration: _c, ...modelled } = overview.structuredContent.data
        assert.deepStrictEqual(modelled, plain.structuredContent.data)

        const campaigns = yield* callTool(token, sessionId, "list_campaigns", { profile_id: profile.profileId, days: "60", calibrated: "true" })
        assert.strictEqual(campaigns.isError, false, JSON.stringify(campaigns))
        const campaignsHttp = yield* rest("/api/v1/campaigns?days=60&calibrated=true")
        assert.strictEqual(campaignsHttp.status, 200, campaignsHttp.text)
        assert.deepStrictEqual(sansAsOf(campaigns.structuredContent), sansAsOf(campaignsHttp.json))
        for (const row of campaigns.structuredContent.data) {
          assert.deepStrictEqual(row.calibration, row.platform_id === "cmp_t" ? calibration[0] : null)
        }
        const refused = yield* callTool(token, sessionId, "list_campaigns", { profile_id: profile.profileId, calibrated: "yes" })
        assert.strictEqual(refused.isError, true)
      }))

    it.effect("a profile the person cannot reach is not_found, the same as one that does not exist", () =>
      Effect.gen(function*() {
        const { token } = yield* fixture(["mcp:read"])
        const other = yield* seedEventsProfile()
        const { sessionId } = yield* initialize(token)
        const foreign = yield* callTool(token, sessionId, "list_conversions", { profile_id: other.profileId })
        const missing = yield* callTool(token, sessionId, "list_conversions", { profile_id: crypto.randomUUID() })
        for (const refused of [foreign, missing]) {
          assert.strictEqual(refused.isError, true)
          assert.strictEqual(refused.structuredContent.error.code, "not_found")
          assert.strictEqual(refused.structuredContent.error.status, 404)
        }
      }))
  })

  describe("scopes and writeback", () => {
    it.effect("tools/list names exactly the tools the token may call: each listed one runs, each other is insufficient_scope", () =>
      Effect.gen(function*() {
        const { owner, profile, token: full } = yield* fixture(["mcp:read", "mcp:read_pii", "mcp:write"])
        yield* setMcpSettings(profile, owner, { pii_mode: "redacted", mcp_writeback_enabled: true })
        const ingested = yield* ingest(profile.key, {
          event_name: "purchase",
          idempotency_key: `order-${crypto.randomUUID()}`,
          occurred_at: new Date().toISOString(),
          properties: { value: 5, currency: "EUR" },
          user_traits: { external_id: "cust-list" }
        })
        assert.strictEqual(ingested.status, 200, ingested.text)
        const onProfile = { profile_id: profile.profileId }
        // Arguments every tool accepts, so a refusal can only come from the token, not the input.
        const argumentsOf: Record<string, Record<string, unknown>> = {
          list_workspaces: {},
          list_profiles: {},
          analytics_overview: { ...onProfile, days: "7" },
          analytics_timeseries: { ...onProfile, days: "7" },
          list_campaigns: onProfile,
          list_conversions: onProfile,
          conversion_journey: { ...onProfile, id: ingested.json.data.conversion_id },
          list_recommendations: onProfile,
          // No such experiment: a listed call reaches the service and answers not_found.
          experiment_results: { ...onProfile, id: crypto.randomUUID() },
          conversion_sync_wiring: onProfile,
          list_export_deliveries: onProfile,
          upsert_goal_definition: { ...onProfile, conversion_key: "demo_booked", name: "Demo booked", event_names: ["demo"] },
          // No such recommendation: a listed call reaches the service and answers not_found.
          dismiss_recommendation: { ...onProfile, id: crypto.randomUUID() }
        }
        const listedNames = (token: string, sessionId: string) =>
          Effect.map(rpc(token, sessionId, "tools/list"), (listed) => {
            assert.strictEqual(listed.status, 200, listed.text)
            return listed.json.result.tools.map((tool: any) => String(tool.name))
          })

        const fullSession = yield* initialize(full)
        assert.deepStrictEqual(yield* listedNames(full, fullSession.sessionId), ALL_TOOLS)
        const upsertTool = (yield* rpc(full, fullSession.sessionId, "tools/list")).json.result.tools
          .find((tool: any) => tool.name === "upsert_goal_definition")
        assert.includeMembers(upsertTool.inputSchema.required, ["profile_id", "conversion_key", "name", "event_names"])
        assert.strictEqual(upsertTool.annotations.readOnlyHint, false)

        let written = false
        for (
          const [grants, expected] of [
            [["mcp:read"], READ_TOOLS],
            [["mcp:write"], [
              "list_workspaces",
              "list_profiles",
              "conversion_sync_wiring",
              "list_export_deliveries",
              "upsert_goal_definition",
              "dismiss_recommendation"
            ]],
            [["mcp:read_pii"], ["list_workspaces", "list_profiles"]]
          ] as const
        ) {
          const token = yield* mintToken(owner, { grants })
          const { sessionId } = yield* initialize(token)
          const listed: ReadonlyArray<string> = yield* listedNames(token, sessionId)
          assert.deepStrictEqual(listed, expected, grants.join(" "))
          for (const name of ALL_TOOLS) {
            const result = yield* callTool(token, sessionId, name, argumentsOf[name] ?? {})
            const code = result.isError ? result.structuredContent.error.code : undefined
            if (listed.includes(name)) {
              const reached = code === undefined || ((name === "dismiss_recommendation" || name === "experiment_results") && code === "not_found")
              assert.isTrue(reached, `${grants.join(" ")} ${name}: ${JSON.stringify(result)}`)
            } else {
              assert.strictEqual(code, "insufficient_scope", `${grants.join(" ")} ${name}`)
            }
          }
          // A refused upsert writes nothing; the one listed (mcp:write) wrote the definition.
          written = written || listed.includes("upsert_goal_definition")
          assert.deepStrictEqual(yield* definitionsOf(profile.profileId, "demo_booked"), written ? [{ name: "Demo booked" }] : [])
        }
      }))

    it.effect("a tool outside the token's grant is a tool error insufficient_scope naming the grant", () =>
      Effect.gen(function*() {
        const { profile, token } = yield* fixture(["mcp:read"])
        const { sessionId } = yield* initialize(token)
        const refused = yield* callTool(token, sessionId, "list_export_deliveries", { profile_id: profile.profileId })
        assert.strictEqual(refused.isError, true)
        assert.strictEqual(refused.structuredContent.error.code, "insufficient_scope")
        assert.strictEqual(refused.structuredContent.error.status, 403)
        assert.include(refused.structuredContent.error.message, "MCP grant does not include exports:read")
        assert.isString(refused.structuredContent.error.request_id)
      }))

    it.effect("a write tool needs mcp_writeback_enabled: refused and nothing written while off, applied (and safe to repeat) once on", () =>
      Effect.gen(function*() {
        const { owner, profile, token } = yield* fixture(["mcp:read", "mcp:write"])
        const { sessionId } = yield* initialize(token)
        const goal = { profile_id: profile.profileId, conversion_key: "demo_booked", name: "Demo booked", event_names: ["demo"] }

        const refused = yield* callTool(token, sessionId, "upsert_goal_definition", goal)
        assert.strictEqual(refused.isError, true)
        assert.strictEqual(refused.structuredContent.error.code, "insufficient_scope")
        assert.strictEqual(refused.structuredContent.error.reason, "mcp_writeback_disabled")
        assert.deepStrictEqual(yield* definitionsOf(profile.profileId, "demo_booked"), [])

        yield* setMcpSettings(profile, owner, { pii_mode: "redacted", mcp_writeback_enabled: true })
        const created = yield* callTool(token, sessionId, "upsert_goal_definition", goal)
        assert.strictEqual(created.isError, false, JSON.stringify(created))
        assert.strictEqual(created.structuredContent.data.conversion_key, "demo_booked")
        assert.strictEqual(created.structuredContent.meta.created, true)
        const repeated = yield* callTool(token, sessionId, "upsert_goal_definition", goal)
        assert.strictEqual(repeated.structuredContent.meta.created, false)
        assert.strictEqual(repeated.structuredContent.data.id, created.structuredContent.data.id)
        assert.deepStrictEqual(yield* definitionsOf(profile.profileId, "demo_booked"), [{ name: "Demo booked" }])

        // A read-only grant stays read-only with writeback on.
        const reader = yield* mintToken(owner, { grants: ["mcp:read"] })
        const readerSession = yield* initialize(reader)
        const readOnly = yield* callTool(reader, readerSession.sessionId, "upsert_goal_definition", { ...goal, name: "Renamed" })
        assert.strictEqual(readOnly.structuredContent.error.code, "insufficient_scope")
        assert.include(readOnly.structuredContent.error.message, "goals:write")
        assert.deepStrictEqual(yield* definitionsOf(profile.profileId, "demo_booked"), [{ name: "Demo booked" }])
      }))

    it.effect("journeys: projected under pii_mode redacted even with mcp:read_pii; the person's row once the workspace says full", () =>
      Effect.gen(function*() {
        const { owner, profile, token } = yield* fixture(["mcp:read", "mcp:read_pii"])
        const ingested = yield* ingest(profile.key, {
          event_name: "purchase",
          idempotency_key: `order-${crypto.randomUUID()}`,
          occurred_at: new Date().toISOString(),
          properties: { value: 10, currency: "EUR" },
          user_traits: { external_id: "cust-pii", email: "pii@example.com" }
        })
        assert.strictEqual(ingested.status, 200, ingested.text)
        const conversionId = ingested.json.data.conversion_id
        const { sessionId } = yield* initialize(token)
        const args = { profile_id: profile.profileId, id: conversionId }

        const redacted = yield* callTool(token, sessionId, "conversion_journey", args)
        assert.strictEqual(redacted.isError, false, JSON.stringify(redacted))
        assert.strictEqual(redacted.structuredContent.meta.conversion.customer_key, "cust-pii")
        assert.notProperty(redacted.structuredContent.meta.conversion, "customer_profile_id")

        yield* setMcpSettings(profile, owner, { pii_mode: "full", mcp_writeback_enabled: false })
        const full = yield* callTool(token, sessionId, "conversion_journey", args)
        assert.strictEqual(full.isError, false, JSON.stringify(full))
        assert.isString(full.structuredContent.meta.conversion.customer_profile_id)

        // Without the mcp:read_pii grant, pii_mode full changes nothing.
        const reader = yield* mintToken(owner, { grants: ["mcp:read"] })
        const readerSession = yield* initialize(reader)
        const projected = yield* callTool(reader, readerSession.sessionId, "conversion_journey", args)
        assert.notProperty(projected.structuredContent.meta.conversion, "customer_profile_id")
      }))

    it.effect("bad arguments are a tool error validation_error naming the field; an unknown tool is -32602", () =>
      Effect.gen(function*() {
        const { owner, profile, token } = yield* fixture(["mcp:read", "mcp:write"])
        yield* setMcpSettings(profile, owner, { pii_mode: "redacted", mcp_writeback_enabled: true })
        const { sessionId } = yield* initialize(token)
        const missing = yield* callTool(token, sessionId, "upsert_goal_definition", { profile_id: profile.profileId, name: "x" })
        assert.strictEqual(missing.isError, true)
        assert.strictEqual(missing.structuredContent.error.code, "validation_error")
        assert.include(missing.structuredContent.error.message, "arguments.conversion_key")
        const excess = yield* callTool(token, sessionId, "list_conversions", { profile_id: profile.profileId, surprise: 1 })
        assert.strictEqual(excess.structuredContent.error.code, "validation_error")
        assert.include(excess.structuredContent.error.message, "surprise")
        const badLimit = yield* callTool(token, sessionId, "list_conversions", { profile_id: profile.profileId, limit: "0" })
        assert.strictEqual(badLimit.structuredContent.error.code, "validation_error")
        const noProfile = yield* callTool(token, sessionId, "list_conversions", {})
        assert.strictEqual(noProfile.structuredContent.error.code, "validation_error")
        assert.include(noProfile.structuredContent.error.message, "arguments.profile_id")
        assert.deepStrictEqual(yield* definitionsOf(profile.profileId, "x"), [])

        const unknown = yield* rpc(token, sessionId, "tools/call", { name: "drop_tables", arguments: {} })
        assert.strictEqual(unknown.status, 200)
        assert.strictEqual(unknown.json.error.code, -32602)
        assert.isUndefined(unknown.json.result)
      }))
  })

  describe("transport rules", () => {
    it.effect("sessions: required after initialize (400), bound to the token (404), revision negotiated and checked", () =>
      Effect.gen(function*() {
        const { owner, token } = yield* fixture(["mcp:read"])
        const { sessionId } = yield* initialize(token)
        const other = yield* mintToken(owner, { grants: ["mcp:read"] })

        const without = yield* post(token, { jsonrpc: "2.0", id: 1, method: "tools/list" })
        assert.strictEqual(without.status, 400)
        assert.strictEqual(without.json.error.code, -32600)
        const forged = yield* post(token, { jsonrpc: "2.0", id: 2, method: "tools/list" }, { "mcp-session-id": "2025-06-18.abc.def" })
        assert.strictEqual(forged.status, 404)
        assert.strictEqual(forged.json.error.code, -32001)
        const borrowed = yield* post(other, { jsonrpc: "2.0", id: 3, method: "tools/list" }, { "mcp-session-id": sessionId })
        assert.strictEqual(borrowed.status, 404)
        const unsupported = yield* post(token, { jsonrpc: "2.0", id: 4, method: "ping" }, {
          "mcp-session-id": sessionId,
          "mcp-protocol-version": "2024-11-05"
        })
        assert.strictEqual(unsupported.status, 400)
        assert.include(unsupported.json.error.message, "MCP-Protocol-Version")

        // An unknown revision is answered with the newest this server speaks; an older supported one is kept.
        const newest = yield* initialize(token, "2099-01-01")
        assert.strictEqual(newest.opened.json.result.protocolVersion, "2025-06-18")
        const older = yield* initialize(token, "2025-03-26")
        assert.strictEqual(older.opened.json.result.protocolVersion, "2025-03-26")
        // Batches belong to 2025-03-26 only.
        const batch = [{ jsonrpc: "2.0", id: "a", method: "ping" }, { jsonrpc: "2.0", method: "notifications/initialized" }, {
          jsonrpc: "2.0",
          id: "b",
          method: "tools/list"
        }]
        const batched = yield* post(token, batch, { "mcp-session-id": older.sessionId })
        assert.strictEqual(batched.status, 200)
        assert.deepStrictEqual(batched.json.map((one: any) => one.id), ["a", "b"])
        const refusedBatch = yield* post(token, batch, { "mcp-session-id": sessionId })
        assert.strictEqual(refusedBatch.status, 400)
        assert.strictEqual(refusedBatch.json.error.code, -32600)
        const initializeInBatch = yield* post(token, [{ jsonrpc: "2.0", id: 9, method: "initialize", params: { protocolVersion: "2025-03-26" } }])
        assert.strictEqual(initializeInBatch.status, 400)
      }))

    it.effect("malformed JSON is 400 -32700; not a message 400 -32600; an unknown method -32601; wrong media type 415", () =>
      Effect.gen(function*() {
        const { token } = yield* fixture(["mcp:read"])
        const { sessionId } = yield* initialize(token)
        const headers = { "mcp-session-id": sessionId }
        const garbled = yield* post(token, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ", headers)
        assert.strictEqual(garbled.status, 400)
        assert.deepStrictEqual(garbled.json, { jsonrpc: "2.0", id: null, error: { code: -32700, message: garbled.json.error.message } })
        const notMessage = yield* post(token, { id: 2, method: "ping" }, headers)
        assert.strictEqual(notMessage.status, 400)
        assert.strictEqual(notMessage.json.error.code, -32600)
        assert.strictEqual(notMessage.json.id, 2)
        const nullId = yield* post(token, { jsonrpc: "2.0", id: null, method: "ping" }, headers)
        assert.strictEqual(nullId.status, 400)
        const unknown = yield* rpc(token, sessionId, "resources/list")
        assert.strictEqual(unknown.status, 200)
        assert.strictEqual(unknown.json.error.code, -32601)
        const text = yield* post(token, "{}", { ...headers, "content-type": "text/plain" })
        assert.strictEqual(text.status, 415)
        const nul = yield* rpc(token, sessionId, "tools/call", { name: "list_conversions", arguments: { profile_id: "\u0000" } })
        assert.isBelow(nul.status, 500)
      }))

    it.effect("credentials: none or unknown is 401 with the protected-resource challenge; an API key is 403", () =>
      Effect.gen(function*() {
        const { profile } = yield* fixture(["mcp:read"])
        const anonymous = yield* post(undefined, { jsonrpc: "2.0", id: 1, method: "ping" })
        assert.strictEqual(anonymous.status, 401)
        assert.strictEqual(anonymous.json.error.code, "unauthorized")
        const challenge = anonymous.headers.get("www-authenticate") ?? ""
        assert.match(challenge, /^Bearer resource_metadata="http[^"]+\/\.well-known\/oauth-protected-resource"$/)
        const revoked = yield* post("svc_user_not-a-real-token", { jsonrpc: "2.0", id: 1, method: "ping" })
        assert.strictEqual(revoked.status, 401)
        assert.isNotNull(revoked.headers.get("www-authenticate"))
        const apiKey = yield* post(profile.key, { jsonrpc: "2.0", id: 1, method: "ping" })
        assert.strictEqual(apiKey.status, 403)
        assert.strictEqual(apiKey.json.error.code, "insufficient_scope")
        assert.strictEqual(apiKey.json.error.reason, "credential_kind_not_accepted")

        const metadata = yield* call("/.well-known/oauth-protected-resource")
        assert.strictEqual(metadata.status, 200)
        assert.match(metadata.json.resource, /\/mcp$/)
        assert.lengthOf(metadata.json.authorization_servers, 1)
        const server = yield* call("/.well-known/oauth-authorization-server")
        assert.strictEqual(server.json.issuer, metadata.json.authorization_servers[0])
      }))

    it.effect("GET and DELETE /mcp are 405 with Allow: POST; an event-stream-only Accept gets one SSE event", () =>
      Effect.gen(function*() {
        const { token } = yield* fixture(["mcp:read"])
        for (const method of ["GET", "DELETE"]) {
          const refused = yield* call("/mcp", { method, headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" } })
          assert.strictEqual(refused.status, 405)
          assert.strictEqual(refused.headers.get("allow"), "POST")
        }
        const { sessionId } = yield* initialize(token)
        const streamed = yield* post(token, { jsonrpc: "2.0", id: 7, method: "ping" }, {
          "mcp-session-id": sessionId,
          accept: "text/event-stream"
        })
        assert.strictEqual(streamed.status, 200)
        assert.match(streamed.headers.get("content-type") ?? "", /^text\/event-stream/)
        assert.strictEqual(streamed.text, `event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", id: 7, result: {} })}\n\n`)
      }))

    it.effect("each request spends the token's per-minute units: over the allowance is 429 with Retry-After", () =>
      Effect.gen(function*() {
        const { token } = yield* fixture(["mcp:read"], { rate_limit_units_per_minute: 3 })
        const { sessionId } = yield* initialize(token)
        // initialize and notifications/initialized took 2 units.
        const third = yield* rpc(token, sessionId, "ping")
        assert.strictEqual(third.status, 200)
        assert.strictEqual(third.headers.get("x-ratelimit-remaining"), "0")
        const fourth = yield* rpc(token, sessionId, "ping")
        assert.strictEqual(fourth.status, 429)
        assert.strictEqual(fourth.json.error.code, "rate_limit_exceeded")
        assert.isNotNull(fourth.headers.get("retry-after"))
      }))
  })
})
