/**
 * `GET /api/v1/connections/{provider}/stages` (decision 0060) over real HTTP against the sandbox
 * CRM served by the app itself: the CRM is connected through a connect hand-off and the sandbox's
 * consent page, stages are read live (labels in en and es), mappings are written through the
 * existing outcome-definition routes, and the sandbox's `_faults` make the CRM throttle, fail and
 * revoke the grant.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call, callAs } from "../support/app.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { connectProvider, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth } from "../support/sandbox-world.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const WRITER = ["connections:read", "connections:write", "goals:write", "conversions:read"]

interface Fixture extends SeededProfile {
  readonly key: string
}

const send = callAs

const stagesOf = (key: string, query = "") => send(key, "GET", `/api/v1/connections/crm/stages${query}`)

/** Sets the CRM's faults in the sandbox world of `key`'s profile (decision 0109). */
const faults = (key: string, body: Record<string, unknown>) =>
  Effect.map(
    call("/sandbox/crm/_faults", { method: "POST", headers: { "content-type": "application/json", ...keyAuth(key) }, body: JSON.stringify(body) }),
    (response) => assert.strictEqual(response.status, 200, response.text)
  )

const clearFaults = (key: string) =>
  faults(key, { throttle: 0, error_rate: 0, fail_next: 0, timeout_ms: 0, missing_permission: false, revoke_tokens: false })

const fixture = Effect.gen(function*() {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes: WRITER, rateLimitPerMinute: 10_000 })
  return { ...profile, key } satisfies Fixture
})

/** Event definitions whose names become the profile's outcome keys (`purchase`, `appointment_booked`). */
const defineOutcomes = (key: string) =>
  Effect.gen(function*() {
    for (const [conversionKey, eventName] of [["purchase", "purchase"], ["appointment", "appointment_booked"]] as const) {
      const created = yield* send(key, "POST", "/api/v1/goals/definitions", {
        conversion_key: conversionKey,
        name: conversionKey,
        event_names: [eventName]
      })
      assert.strictEqual(created.status, 201, created.text)
    }
  })

/** Connects the sandbox CRM as a person would: mint, consent, back through the service's callback. */
const connectCrm = (key: string) => Effect.map(connectProvider(key, "crm"), (connected) => connected.connectionId)

const SALES_WON = "stage_1001_sales_won"
const SALES_QUALIFIED = "stage_1001_sales_qualified"

const stage = (body: any, id: string) => {
  const found = (body.data.stages as ReadonlyArray<any>).find((s) => s.id === id)
  assert.isDefined(found, `stage ${id}`)
  return found
}

layer(serveAppOnOwnPort(), { timeout: "120 seconds", excludeTestServices: true })((it) => {
  describe("GET /api/v1/connections/{provider}/stages", () => {
    it.effect("without a CRM connection: 200 not_connected with next_step connect_crm", () =>
      Effect.gen(function*() {
        const profile = yield* fixture
        const read = yield* stagesOf(profile.key)
        assert.strictEqual(read.status, 200, read.text)
        assert.deepStrictEqual(read.json.data, {
          provider: "crm",
          locale: "en",
          status: "not_connected",
          can_write: true,
          next_step: "connect_crm",
          connection_id: null,
          outcomes: [],
          stages: []
        })
      }))

    it.effect("a connected CRM: its stages live in en and es, suggestions among the outcome keys, ready", () =>
      Effect.gen(function*() {
        const profile = yield* fixture
        yield* clearFaults(profile.key)
        yield* defineOutcomes(profile.key)
        const connectionId = yield* connectCrm(profile.key)

        const en = yield* stagesOf(profile.key, "?locale=en")
        assert.strictEqual(en.status, 200, en.text)
        const data = en.json.data
        assert.strictEqual(data.connection_id, connectionId)
        assert.strictEqual(data.status, "ready")
        assert.strictEqual(data.next_step, null)
        assert.strictEqual(data.can_write, true)
        assert.deepStrictEqual(data.outcomes, ["appointment_booked", "purchase"])
        // Every stage of both seeded pipelines: pipelines in the CRM's order, stages in board order.
        assert.deepStrictEqual(
          data.stages.map((s: any) => s.id),
          [
            "stage_1001_appointments_booked",
            "stage_1001_appointments_attended",
            "stage_1001_appointments_paid",
            "stage_1001_appointments_no_show",
            "stage_1001_sales_new",
            "stage_1001_sales_qualified",
            "stage_1001_sales_proposal",
            "stage_1001_sales_won",
            "stage_1001_sales_lost"
          ]
        )
        assert.deepStrictEqual(stage(en.json, SALES_WON), {
          id: SALES_WON,
          pipeline_id: "pipe_1001_sales",
          pipeline_label: "Sales",
          label: "Closed won",
          position: 3,
          kind: "won",
          event_name: `crm.stage.${SALES_WON}`,
          suggested_outcome: "purchase",
          current: { outcome: "purchase", source: "suggested", definition_id: null },
          writable: true
        })
        const booked = stage(en.json, "stage_1001_appointments_booked")
        assert.strictEqual(booked.suggested_outcome, "appointment_booked")
        assert.deepStrictEqual(booked.current, { outcome: "appointment_booked", source: "suggested", definition_id: null })
        assert.strictEqual(stage(en.json, "stage_1001_appointments_paid").suggested_outcome, "purchase")
        const lost = stage(en.json, "stage_1001_sales_lost")
        assert.deepStrictEqual(lost.current, { outcome: null, source: "engine_default", definition_id: null })
        assert.strictEqual(lost.writable, false)
        assert.strictEqual(stage(en.json, SALES_QUALIFIED).current.source, "engine_default")
        assert.strictEqual(stage(en.json, SALES_QUALIFIED).writable, true)

        const es = yield* stagesOf(profile.key, "?locale=es")
        assert.strictEqual(es.status, 200, es.text)
        assert.strictEqual(es.json.data.locale, "es")
        assert.strictEqual(stage(es.json, SALES_WON).label, "Ganado")
        assert.strictEqual(stage(es.json, SALES_WON).pipeline_label, "Ventas")
        assert.strictEqual(stage(es.json, "stage_1001_appointments_booked").label, "Cita reservada")
        // The default locale is en.
        assert.strictEqual(stage((yield* stagesOf(profile.key)).json, SALES_WON).label, "Closed won")
      }))

    it.effect("without an outcome key for a won stage: unmapped with next_step map_stages", () =>
      Effect.gen(function*() {
        const profile = yield* fixture
        yield* clearFaults(profile.key)
        yield* connectCrm(profile.key)
        const read = yield* stagesOf(profile.key)
        assert.strictEqual(read.status, 200, read.text)
        assert.strictEqual(read.json.data.status, "unmapped")
        assert.strictEqual(read.json.data.next_step, "map_stages")
        assert.deepStrictEqual(stage(read.json, SALES_WON).current, { outcome: null, source: "engine_default", definition_id: null })
      }))

    it.effect("mappings written through PUT and PATCH outcome-definitions and POST goals/definitions read as user", () =>
      Effect.gen(function*() {
        const profile = yield* fixture
        yield* clearFaults(profile.key)
        yield* defineOutcomes(profile.key)
        yield* connectCrm(profile.key)
        const before = yield* stagesOf(profile.key)
        const wonEvent: string = stage(before.json, SALES_WON).event_name

        const outcomes = yield* send(profile.key, "GET", "/api/v1/profile/outcome-definitions")
        const kept = (outcomes.json.data.definitions as ReadonlyArray<any>).map((d) => ({
          conversion_key: d.conversion_key,
          name: d.name,
          event_names: d.event_names
        }))
        const put = yield* send(profile.key, "PUT", "/api/v1/profile/outcome-definitions", {
          definitions: [
            ...kept,
            { conversion_key: "crm_won", name: "Deal won", kind: "pipeline_stage", event_names: [wonEvent], event_key: "appointment_booked" }
          ]
        })
        assert.strictEqual(put.status, 200, put.text)
        const definitionId: string = (put.json.data.definitions as ReadonlyArray<any>).find((d) => d.conversion_key === "crm_won").id
        const afterPut = yield* stagesOf(profile.key)
        assert.deepStrictEqual(stage(afterPut.json, SALES_WON).current, {
          outcome: "appointment_booked",
          source: "user",
          definition_id: definitionId
        })
        assert.strictEqual(stage(afterPut.json, SALES_WON).suggested_outcome, "purchase")

        const patched = yield* send(profile.key, "PATCH", `/api/v1/outcome-definitions/${definitionId}`, { event_key: "purchase" })
        assert.strictEqual(patched.status, 200, patched.text)
        assert.deepStrictEqual(stage((yield* stagesOf(profile.key)).json, SALES_WON).current, {
          outcome: "purchase",
          source: "user",
          definition_id: definitionId
        })

        // An unknown outcome key is 422 and changes nothing.
        const unknown = yield* send(profile.key, "PATCH", `/api/v1/outcome-definitions/${definitionId}`, { event_key: "no_such_outcome" })
        assert.strictEqual(unknown.status, 422, unknown.text)
        assert.strictEqual(unknown.json.error.code, "validation_error")
        assert.strictEqual(stage((yield* stagesOf(profile.key)).json, SALES_WON).current.outcome, "purchase")

        // A person left it unmapped on purpose: still theirs, no outcome.
        const cleared = yield* send(profile.key, "PATCH", `/api/v1/outcome-definitions/${definitionId}`, { event_key: null })
        assert.strictEqual(cleared.status, 200, cleared.text)
        const afterClear = yield* stagesOf(profile.key)
        assert.deepStrictEqual(stage(afterClear.json, SALES_WON).current, { outcome: null, source: "user", definition_id: definitionId })
        assert.strictEqual(afterClear.json.data.status, "ready")

        // An event definition listing the stage's event makes reaching the stage a conversion of its own.
        const qualifiedEvent: string = stage(afterClear.json, SALES_QUALIFIED).event_name
        const goal = yield* send(profile.key, "POST", "/api/v1/goals/definitions", {
          conversion_key: "qualified_lead",
          name: "Qualified lead",
          event_names: [qualifiedEvent]
        })
        assert.strictEqual(goal.status, 201, goal.text)
        assert.deepStrictEqual(stage((yield* stagesOf(profile.key)).json, SALES_QUALIFIED).current, {
          outcome: "qualified_lead",
          source: "user",
          definition_id: goal.json.data.id
        })
      }))

    it.effect("scopes: connections:read or analytics:read reads (without goals:write nothing is writable); neither is 403", () =>
      Effect.gen(function*() {
        const profile = yield* fixture
        yield* clearFaults(profile.key)
        yield* connectCrm(profile.key)
        for (const scopes of [["connections:read"], ["analytics:read"]]) {
          const { key } = yield* seedApiKey(profile, { scopes })
          const read = yield* stagesOf(key)
          assert.strictEqual(read.status, 200, `${scopes}: ${read.text}`)
          assert.strictEqual(read.json.data.can_write, false)
          assert.isAbove(read.json.data.stages.length, 0)
          assert.isTrue(read.json.data.stages.every((s: any) => s.writable === false))
        }
        const { key: other } = yield* seedApiKey(profile, { scopes: ["campaigns:read", "conversions:read"] })
        const refused = yield* stagesOf(other)
        assert.strictEqual(refused.status, 403, refused.text)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
      }))

    it.effect("an app-provisioned profile with the add-on off: stages read, nothing writable, no outcome keys", () =>
      Effect.gen(function*() {
        const app = yield* registerApp("Stages app")
        const created = yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `m-${crypto.randomUUID().slice(0, 8)}` })
        assert.strictEqual(created.status, 201, created.text)
        const profile = { profileId: created.json.data.profile_id as string, workspaceId: created.json.data.workspace_id as string }
        const { key } = yield* seedApiKey(profile, { scopes: WRITER, rateLimitPerMinute: 10_000 })
        yield* clearFaults(key)
        yield* connectCrm(key)
        const read = yield* stagesOf(key)
        assert.strictEqual(read.status, 200, read.text)
        assert.strictEqual(read.json.data.can_write, true)
        assert.deepStrictEqual(read.json.data.outcomes, [])
        assert.strictEqual(read.json.data.status, "unmapped")
        assert.isTrue(read.json.data.stages.every((s: any) => s.writable === false && s.current.source === "engine_default"))
      }))

    it.effect("bad input: a bad locale is 400 invalid_parameter; an unknown provider or one that is not a CRM is 404", () =>
      Effect.gen(function*() {
        const profile = yield* fixture
        for (const locale of ["fr", "EN", ""]) {
          const bad = yield* stagesOf(profile.key, `?locale=${locale}`)
          assert.strictEqual(bad.status, 400, bad.text)
          assert.strictEqual(bad.json.error.code, "invalid_parameter")
        }
        const unknown = yield* send(profile.key, "GET", "/api/v1/connections/nope/stages")
        assert.strictEqual(unknown.status, 404, unknown.text)
        assert.strictEqual(unknown.json.error.code, "not_found")
        for (const provider of ["adplatform", "commerce", "cardgw"]) {
          const other = yield* send(profile.key, "GET", `/api/v1/connections/${provider}/stages`)
          assert.strictEqual(other.status, 404, other.text)
          assert.strictEqual(other.json.error.reason, "not_a_crm")
        }
      }))

    it.effect("provider failures: throttled 429 with Retry-After, failing 502 adplatform_unavailable, a dead grant reconnect_required", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* fixture
        yield* clearFaults(profile.key)
        const connectionId = yield* connectCrm(profile.key)

        yield* faults(profile.key, { throttle: 20 })
        const throttled = yield* stagesOf(profile.key)
        assert.strictEqual(throttled.status, 429, throttled.text)
        assert.strictEqual(throttled.json.error.code, "rate_limit_exceeded")
        assert.strictEqual(throttled.json.error.provider, "crm")
        assert.isNotNull(throttled.headers.get("retry-after"))
        yield* clearFaults(profile.key)

        yield* faults(profile.key, { fail_next: 20 })
        const failing = yield* stagesOf(profile.key)
        assert.strictEqual(failing.status, 502, failing.text)
        assert.strictEqual(failing.json.error.code, "adplatform_unavailable")
        assert.strictEqual(failing.json.error.provider, "crm")
        yield* clearFaults(profile.key)
        assert.strictEqual((yield* stagesOf(profile.key)).status, 200)

        yield* faults(profile.key, { revoke_tokens: true })
        const dead = yield* stagesOf(profile.key)
        assert.strictEqual(dead.status, 200, dead.text)
        assert.strictEqual(dead.json.data.status, "reconnect_required")
        assert.strictEqual(dead.json.data.next_step, "reconnect_crm")
        assert.deepStrictEqual(dead.json.data.stages, [])
        const [row] = yield* sql<{ status: string }>`SELECT status FROM connections WHERE id = ${connectionId}`
        assert.strictEqual(row?.status, "reconnect_required")
        // Known dead now: answered without calling the CRM.
        const again = yield* stagesOf(profile.key)
        assert.strictEqual(again.json.data.status, "reconnect_required")
        assert.strictEqual(again.json.data.connection_id, connectionId)
        yield* clearFaults(profile.key)
      }))
  })
})
