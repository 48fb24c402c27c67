/**
 * Goal and outcome definitions (decision 0030): upsert by conversion_key, the default flag,
 * validation, the deprecated POST /api/v1/goals, the event_key rule, and the replay each
 * classification write queues. The background worker is off here, so queued replays stay queued
 * and the queue can be read exactly.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { call, callAs, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const WRITER = ["goals:write", "conversions:read", "attribution:write", "analytics:read"]

const seedWriter = (scopes: ReadonlyArray<string> = WRITER) =>
  Effect.gen(function*() {
    const profile = yield* seedProfile()
    const { key } = yield* seedApiKey(profile, { scopes, rateLimitPerMinute: 10_000 })
    return { ...profile, key }
  })

const send = callAs

const upsert = (key: string, body: unknown) => send(key, "POST", "/api/v1/goals/definitions", body)

interface JobRow {
  readonly id: string
  readonly state: string
  readonly reason: string
}

const replayJobs = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    return yield* sql<JobRow>`
      SELECT id::text AS id, state, reason FROM work_jobs
      WHERE profile_id = ${profileId} AND kind = 'attribution_replay' ORDER BY created_at, id`
  })

interface DefinitionDbRow {
  readonly conversion_key: string
  readonly is_default: boolean
  readonly lookback_window_days: number
  readonly event_names: ReadonlyArray<string>
  readonly event_key: string | null
}

const definitionRows = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    return yield* sql<DefinitionDbRow>`
      SELECT conversion_key, is_default, lookback_window_days, event_names, event_key
      FROM conversion_definitions WHERE profile_id = ${profileId} ORDER BY conversion_key`
  })

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** An outcome event the profile received (the ingest route is another domain's). */
const receiveEvent = (profile: SeededProfile, eventName: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const id = crypto.randomUUID()
    yield* sql`
      WITH e AS (
        INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at)
        VALUES (${id}, ${profile.profileId}, ${crypto.randomUUID()}, 'test', ${eventName}, now())
        RETURNING profile_id, idempotency_key, id, occurred_at)
      INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
    return id
  })

const workerOff = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })

layer(serveApp(testSettings()).pipe(Layer.provide(workerOff)), { timeout: "120 seconds", excludeTestServices: true })(
  "goal and outcome definitions",
  (it) => {
    describe("POST /api/v1/goals/definitions", () => {
      it.effect("creates (201) then updates (200) by conversion_key; every classification change joins the one queued replay", () =>
        Effect.gen(function*() {
          const profile = yield* seedWriter()
          const created = yield* upsert(profile.key, {
            conversion_key: "purchase",
            name: "Purchase",
            event_names: ["order_paid", "order_paid", "pos_sale"],
            lookback_window_days: 14,
            counts_as_cash: true
          })
          assert.strictEqual(created.status, 201, created.text)
          const definition = created.json.data
          assert.match(definition.id, UUID)
          assert.deepStrictEqual({ ...definition, id: "", created_at: "", updated_at: "" }, {
            id: "",
            conversion_key: "purchase",
            name: "Purchase",
            kind: "event",
            event_names: ["order_paid", "pos_sale"],
            event_key: null,
            lookback_window_days: 14,
            is_default: false,
            counts_as_cash: true,
            attribution_eligible: true,
            created_at: "",
            updated_at: ""
          })
          assert.strictEqual(created.json.meta.created, true)
          const jobId = created.json.meta.replay_job_id
          assert.match(jobId, UUID)
          assert.deepStrictEqual(yield* replayJobs(profile.profileId), [{ id: jobId, state: "queued", reason: "definitions_changed" }])

          // A new window: same definition, 200, the replay still queued is joined (no second job).
          const updated = yield* upsert(profile.key, {
            conversion_key: "purchase",
            name: "Purchase",
            event_names: ["order_paid", "pos_sale"],
            lookback_window_days: 7
          })
          assert.strictEqual(updated.status, 200, updated.text)
          assert.strictEqual(updated.json.meta.created, false)
          assert.strictEqual(updated.json.data.id, definition.id)
          assert.strictEqual(updated.json.data.lookback_window_days, 7)
          assert.strictEqual(updated.json.data.counts_as_cash, true, "an absent field keeps its value on an update")
          assert.strictEqual(updated.json.meta.replay_job_id, jobId)
          assert.lengthOf(yield* replayJobs(profile.profileId), 1)

          // Only the name: not a classification write, no replay.
          const renamed = yield* upsert(profile.key, { conversion_key: "purchase", name: "Paid order", event_names: ["pos_sale", "order_paid"] })
          assert.strictEqual(renamed.status, 200)
          assert.strictEqual(renamed.json.data.name, "Paid order")
          assert.isNull(renamed.json.meta.replay_job_id)
          assert.lengthOf(yield* replayJobs(profile.profileId), 1)

          // Once a runner holds the replay, the next change queues a new one (it must see the change).
          const sql = yield* SqlClient
          yield* sql`UPDATE work_jobs SET state = 'running', attempts = 1, lease_until = now() + interval '1 minute' WHERE id = ${jobId}`
          const eligible = yield* upsert(profile.key, {
            conversion_key: "purchase",
            name: "Paid order",
            event_names: ["order_paid", "pos_sale"],
            attribution_eligible: false
          })
          assert.strictEqual(eligible.status, 200)
          const jobs = yield* replayJobs(profile.profileId)
          assert.deepStrictEqual(jobs.map((job) => job.state), ["running", "queued"])
          assert.strictEqual(eligible.json.meta.replay_job_id, jobs[1]?.id)
          const [audit] = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM audit_events WHERE profile_id = ${profile.profileId} AND target_kind = 'conversion_definition'`
          assert.strictEqual(audit?.n, 4, "create, window, rename, eligibility: one audit row per write that changed something")
        }))

      it.effect("is_default: true moves the default in the same transaction; concurrent writes leave exactly one", () =>
        Effect.gen(function*() {
          const profile = yield* seedWriter()
          const a = yield* upsert(profile.key, { conversion_key: "lead", name: "Lead", event_names: ["lead"], is_default: true })
          assert.strictEqual(a.json.data.is_default, true)
          const b = yield* upsert(profile.key, { conversion_key: "sale", name: "Sale", event_names: ["sale"], is_default: true })
          assert.strictEqual(b.status, 201)
          assert.strictEqual(b.json.data.is_default, true)
          assert.deepStrictEqual((yield* definitionRows(profile.profileId)).map((row) => [row.conversion_key, row.is_default]), [
            ["lead", false],
            ["sale", true]
          ])
          // PATCH moves it back; the flag alone queues no replay.
          const sql = yield* SqlClient
          yield* sql`UPDATE work_jobs SET state = 'succeeded' WHERE profile_id = ${profile.profileId}`
          const back = yield* send(profile.key, "PATCH", `/api/v1/goals/definitions/${a.json.data.id}`, { is_default: true })
          assert.strictEqual(back.status, 200, back.text)
          assert.isNull(back.json.meta.replay_job_id)
          assert.deepStrictEqual((yield* definitionRows(profile.profileId)).map((row) => [row.conversion_key, row.is_default]), [
            ["lead", true],
            ["sale", false]
          ])
          assert.isTrue((yield* replayJobs(profile.profileId)).every((job) => job.state === "succeeded"))

          const answers = yield* Effect.all(
            ["k1", "k2", "k3", "k4", "k5"].map((key) =>
              upsert(profile.key, { conversion_key: key, name: key, event_names: [`${key}_event`], is_default: true })
            ),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual(answers.map((answer) => answer.status), [201, 201, 201, 201, 201])
          const defaults = (yield* definitionRows(profile.profileId)).filter((row) => row.is_default)
          assert.lengthOf(defaults, 1)
          const queued = (yield* replayJobs(profile.profileId)).filter((job) => job.state === "queued")
          assert.lengthOf(queued, 1, "five creates, one coalesced replay")
          assert.isTrue(answers.every((answer) => answer.json.meta.replay_job_id === queued[0]?.id))
        }))

      it.effect("an invalid body is 400 validation_error naming the field, and nothing is written", () =>
        Effect.gen(function*() {
          const profile = yield* seedWriter()
          const valid = { conversion_key: "signup", name: "Signup", event_names: ["signup"] }
          const cases: ReadonlyArray<readonly [unknown, string]> = [
            [{ ...valid, conversion_key: "sign up!" }, "body.conversion_key"],
            [{ ...valid, conversion_key: "k".repeat(65) }, "body.conversion_key"],
            [{ ...valid, lookback_window_days: 0 }, "body.lookback_window_days"],
            [{ ...valid, lookback_window_days: 366 }, "body.lookback_window_days"],
            [{ ...valid, lookback_window_days: 7.5 }, "body.lookback_window_days"],
            [{ ...valid, event_names: [] }, "body.event_names"],
            [{ ...valid, event_names: ["ok", " "] }, "body.event_names.1"],
            [{ ...valid, event_names: "signup" }, "body.event_names"],
            [{ conversion_key: "signup", event_names: ["signup"] }, "body.name"],
            [{ ...valid, is_default: "yes" }, "body.is_default"]
          ]
          for (const [body, field] of cases) {
            const response = yield* upsert(profile.key, body)
            assert.strictEqual(response.status, 400, JSON.stringify(body))
            assert.strictEqual(response.json.error.code, "validation_error")
            assert.include(response.json.error.message, field, JSON.stringify(body))
          }
          assert.lengthOf(yield* definitionRows(profile.profileId), 0)
          assert.lengthOf(yield* replayJobs(profile.profileId), 0)

          // An event name has one meaning: a second definition listing it is refused, nothing written.
          const first = yield* upsert(profile.key, valid)
          assert.strictEqual(first.status, 201)
          const clash = yield* upsert(profile.key, { conversion_key: "lead", name: "Lead", event_names: ["lead", "signup"] })
          assert.strictEqual(clash.status, 400)
          assert.strictEqual(clash.json.error.code, "validation_error")
          assert.include(clash.json.error.message, "body.event_names")
          assert.include(clash.json.error.message, "\"signup\"")
          assert.deepStrictEqual((yield* definitionRows(profile.profileId)).map((row) => row.conversion_key), ["signup"])
          assert.lengthOf(yield* replayJobs(profile.profileId), 1)
        }))
    })

    describe("GET and PATCH /api/v1/goals/definitions", () => {
      it.effect("lists the profile's definitions page by page; PATCH edits one; another profile's id is the same 404 as an unknown one", () =>
        Effect.gen(function*() {
          const profile = yield* seedWriter()
          const other = yield* seedWriter()
          for (const key of ["a", "b", "c"]) {
            assert.strictEqual((yield* upsert(profile.key, { conversion_key: key, name: key, event_names: [key] })).status, 201)
          }
          const foreign = yield* upsert(other.key, { conversion_key: "x", name: "x", event_names: ["x"] })
          const first = yield* send(profile.key, "GET", "/api/v1/goals/definitions?limit=2")
          assert.strictEqual(first.status, 200)
          assert.deepStrictEqual(first.json.data.map((row: { conversion_key: string }) => row.conversion_key), ["a", "b"])
          assert.strictEqual(first.json.pagination.has_next, true)
          const second = yield* send(profile.key, "GET", `/api/v1/goals/definitions?limit=2&cursor=${first.json.pagination.cursor}`)
          assert.deepStrictEqual(second.json.data.map((row: { conversion_key: string }) => row.conversion_key), ["c"])
          assert.deepStrictEqual(second.json.pagination, { has_next: false, cursor: null })

          // A read-only key reads; it cannot write.
          const reader = yield* seedApiKey(profile, { scopes: ["conversions:read"] })
          assert.strictEqual((yield* send(reader.key, "GET", "/api/v1/goals/definitions")).status, 200)
          const refused = yield* upsert(reader.key, { conversion_key: "d", name: "d", event_names: ["d"] })
          assert.strictEqual(refused.status, 403)
          assert.strictEqual(refused.json.error.code, "insufficient_scope")

          const sql = yield* SqlClient
          yield* sql`UPDATE work_jobs SET state = 'succeeded' WHERE profile_id = ${profile.profileId}`
          const target = first.json.data[0].id
          const patched = yield* send(profile.key, "PATCH", `/api/v1/goals/definitions/${target}`, {
            event_names: ["a", "a_v2"],
            lookback_window_days: 90
          })
          assert.strictEqual(patched.status, 200, patched.text)
          assert.deepStrictEqual(patched.json.data.event_names, ["a", "a_v2"])
          assert.strictEqual(patched.json.data.lookback_window_days, 90)
          assert.strictEqual(patched.json.data.conversion_key, "a")
          const queued = (yield* replayJobs(profile.profileId)).filter((job) => job.state === "queued")
          assert.deepStrictEqual(queued.map((job) => job.id), [patched.json.meta.replay_job_id])

          const foreignPatch = yield* send(profile.key, "PATCH", `/api/v1/goals/definitions/${foreign.json.data.id}`, { name: "mine" })
          const unknown = yield* send(profile.key, "PATCH", `/api/v1/goals/definitions/${crypto.randomUUID()}`, { name: "mine" })
          const malformed = yield* send(profile.key, "PATCH", "/api/v1/goals/definitions/nope", { name: "mine" })
          assert.strictEqual(foreignPatch.status, 404)
          assert.strictEqual(foreignPatch.json.error.code, "not_found")
          assert.strictEqual(withoutRequestId(foreignPatch.text), withoutRequestId(unknown.text))
          assert.strictEqual(withoutRequestId(foreignPatch.text), withoutRequestId(malformed.text))
          assert.deepStrictEqual((yield* definitionRows(other.profileId)).map((row) => row.conversion_key), ["x"])
          const [name] = yield* sql<{ name: string }>`SELECT name FROM conversion_definitions WHERE id = ${foreign.json.data.id}`
          assert.strictEqual(name?.name, "x")
        }))
    })

    describe("POST /api/v1/goals (deprecated)", () => {
      it.effect("still works, as an upsert keyed by the name, with Deprecation, Sunset and Link", () =>
        Effect.gen(function*() {
          const profile = yield* seedWriter()
          const created = yield* send(profile.key, "POST", "/api/v1/goals", { name: "Demo Booked!", event_name: "demo_booked" })
          assert.strictEqual(created.status, 201, created.text)
          assert.strictEqual(created.json.data.conversion_key, "demo_booked")
          assert.strictEqual(created.json.data.name, "Demo Booked!")
          assert.deepStrictEqual(created.json.data.event_names, ["demo_booked"])
          assert.strictEqual(created.json.data.lookback_window_days, 30)
          assert.match(created.json.meta.replay_job_id, UUID)
          assert.strictEqual(created.headers.get("deprecation"), `@${Date.parse("2026-09-05T00:00:00Z") / 1000}`)
          assert.strictEqual(created.headers.get("sunset"), "Fri, 04 Dec 2026 00:00:00 GMT")
          assert.strictEqual(created.headers.get("link"), "</api/v1/goals/definitions>; rel=\"successor-version\"")

          const again = yield* send(profile.key, "POST", "/api/v1/goals", { name: "demo  booked", event_name: "demo_booked_v2", lookback_window_days: 3 })
          assert.strictEqual(again.status, 200)
          assert.strictEqual(again.json.data.id, created.json.data.id)
          assert.deepStrictEqual(again.json.data.event_names, ["demo_booked_v2"])
          assert.strictEqual(again.json.data.lookback_window_days, 3)
          assert.isNotNull(again.headers.get("deprecation"))

          const blank = yield* send(profile.key, "POST", "/api/v1/goals", { name: "!!!", event_name: "x" })
          assert.strictEqual(blank.status, 400)
          assert.include(blank.json.error.message, "body.name")
          assert.strictEqual(blank.headers.get("sunset"), "Fri, 04 Dec 2026 00:00:00 GMT")
          assert.lengthOf(yield* definitionRows(profile.profileId), 1)

          const spec = (yield* call("/api/v1/openapi.json")).json
          assert.strictEqual(spec.paths["/api/v1/goals"].post.deprecated, true)
          assert.deepStrictEqual(spec.paths["/api/v1/goals"].post["x-scopes"], ["goals:write"])
        }))
    })

    describe("outcome definitions and the event_key rule", () => {
      it.effect("PUT replaces the set; a stage event_key outside outcomes[].key is 422 with nothing written; PATCH is idempotent", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const profile = yield* seedWriter()
          yield* receiveEvent(profile, "crm_deal_won")
          const lead = yield* upsert(profile.key, { conversion_key: "lead", name: "Lead", event_names: ["lead_created"] })
          yield* sql`UPDATE work_jobs SET state = 'succeeded' WHERE profile_id = ${profile.profileId}`

          const read = yield* send(profile.key, "GET", "/api/v1/profile/outcome-definitions")
          assert.strictEqual(read.status, 200)
          assert.deepStrictEqual(read.json.data.outcomes, [
            { key: "crm_deal_won", seen_in_events: true, conversion_key: null },
            { key: "lead_created", seen_in_events: false, conversion_key: "lead" }
          ])
          assert.deepStrictEqual(read.json.data.definitions.map((row: { id: string }) => row.id), [lead.json.data.id])

          const stage = {
            conversion_key: "stage_won",
            name: "Closed won",
            kind: "pipeline_stage",
            event_names: ["crm.stage.closed_won"]
          }
          const unknown = yield* send(profile.key, "PUT", "/api/v1/profile/outcome-definitions", {
            definitions: [{ conversion_key: "lead", name: "Lead", event_names: ["lead_created"] }, { ...stage, event_key: "purchase" }]
          })
          assert.strictEqual(unknown.status, 422, unknown.text)
          assert.strictEqual(unknown.json.error.code, "validation_error")
          assert.strictEqual(unknown.json.error.status, 422)
          assert.include(unknown.json.error.message, "body.definitions.1.event_key")
          assert.include(unknown.json.error.message, "outcomes[].key")
          assert.deepStrictEqual((yield* definitionRows(profile.profileId)).map((row) => row.conversion_key), ["lead"])
          assert.isTrue((yield* replayJobs(profile.profileId)).every((job) => job.state === "succeeded"), "no replay queued")

          // A key an event definition of the same body lists is known.
          const replaced = yield* send(profile.key, "PUT", "/api/v1/profile/outcome-definitions", {
            definitions: [
              { conversion_key: "lead", name: "Lead", event_names: ["lead_created"], lookback_window_days: 10 },
              { ...stage, event_key: "lead_created", is_default: true }
            ]
          })
          assert.strictEqual(replaced.status, 200, replaced.text)
          assert.deepStrictEqual(
            replaced.json.data.definitions.map((row: { conversion_key: string; event_key: string | null; is_default: boolean }) => [
              row.conversion_key,
              row.event_key,
              row.is_default
            ]),
            [["lead", null, false], ["stage_won", "lead_created", true]]
          )
          assert.strictEqual(replaced.json.data.definitions[0].id, lead.json.data.id, "kept by conversion_key")
          const queued = (yield* replayJobs(profile.profileId)).filter((job) => job.state === "queued")
          assert.deepStrictEqual(queued.map((job) => job.id), [replaced.json.meta.replay_job_id])
          const stageId = replaced.json.data.definitions[1].id

          // The same PUT again changes nothing and queues nothing.
          yield* sql`UPDATE work_jobs SET state = 'succeeded' WHERE profile_id = ${profile.profileId}`
          const same = yield* send(profile.key, "PUT", "/api/v1/profile/outcome-definitions", {
            definitions: [
              { conversion_key: "lead", name: "Lead", event_names: ["lead_created"], lookback_window_days: 10 },
              { ...stage, event_key: "lead_created", is_default: true }
            ]
          })
          assert.strictEqual(same.status, 200)
          assert.isNull(same.json.meta.replay_job_id)

          // PATCH: a received event name is a known key; the same body twice writes once.
          const patch = (id: string, body: unknown) => send(profile.key, "PATCH", `/api/v1/outcome-definitions/${id}`, body)
          const mapped = yield* patch(stageId, { event_key: "crm_deal_won" })
          assert.strictEqual(mapped.status, 200, mapped.text)
          assert.strictEqual(mapped.json.data.event_key, "crm_deal_won")
          assert.match(mapped.json.meta.replay_job_id, UUID)
          yield* sql`UPDATE work_jobs SET state = 'succeeded' WHERE profile_id = ${profile.profileId}`
          const repeated = yield* patch(stageId, { event_key: "crm_deal_won" })
          assert.strictEqual(repeated.status, 200)
          assert.deepStrictEqual(repeated.json.data, mapped.json.data)
          assert.isNull(repeated.json.meta.replay_job_id)
          assert.isTrue((yield* replayJobs(profile.profileId)).every((job) => job.state === "succeeded"))

          const bad = yield* patch(stageId, { event_key: "never_seen" })
          assert.strictEqual(bad.status, 422)
          assert.include(bad.json.error.message, "body.event_key")
          const onEvent = yield* patch(lead.json.data.id, { event_key: "crm_deal_won" })
          assert.strictEqual(onEvent.status, 400)
          assert.include(onEvent.json.error.message, "pipeline_stage")
          assert.strictEqual((yield* patch(crypto.randomUUID(), { event_key: null })).status, 404)
          assert.strictEqual((yield* patch(stageId, {})).status, 400)
          const rows = yield* definitionRows(profile.profileId)
          assert.deepStrictEqual(rows.map((row) => [row.conversion_key, row.event_key]), [["lead", null], ["stage_won", "crm_deal_won"]])

          // Body rules: duplicate keys, two defaults, a shared event name, event_key on an event definition.
          const rules: ReadonlyArray<readonly [unknown, number, string]> = [
            [[{ conversion_key: "a", name: "a", event_names: ["x"] }, { conversion_key: "a", name: "b", event_names: ["y"] }], 400, "body.definitions.1.conversion_key"],
            [[{ conversion_key: "a", name: "a", event_names: ["x"], is_default: true }, { conversion_key: "b", name: "b", event_names: ["y"], is_default: true }], 400, "body.definitions.1.is_default"],
            [[{ conversion_key: "a", name: "a", event_names: ["x"] }, { conversion_key: "b", name: "b", event_names: ["x"] }], 400, "body.definitions.1.event_names"],
            [[{ conversion_key: "a", name: "a", event_names: ["x"], event_key: "crm_deal_won" }], 400, "body.definitions.0.event_key"],
            [[{ conversion_key: "a", name: "a", kind: "funnel", event_names: ["x"] }], 400, "body.definitions.0.kind"]
          ]
          for (const [definitions, status, field] of rules) {
            const response = yield* send(profile.key, "PUT", "/api/v1/profile/outcome-definitions", { definitions })
            assert.strictEqual(response.status, status, JSON.stringify(definitions))
            assert.include(response.json.error.message, field)
          }
          assert.lengthOf(yield* definitionRows(profile.profileId), 2)
        }))

      it.effect("a definition PUT leaves out is removed; its conversions lose it (no cash, no credit) and one replay is queued", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const profile = yield* seedWriter()
          const sale = yield* upsert(profile.key, { conversion_key: "sale", name: "Sale", event_names: ["sale"], counts_as_cash: true })
          yield* upsert(profile.key, { conversion_key: "lead", name: "Lead", event_names: ["lead"] })
          const eventId = yield* receiveEvent(profile, "sale")
          const conversionId = crypto.randomUUID()
          yield* sql`
            INSERT INTO conversions (id, profile_id, outcome_event_id, definition_id, conversion_key, occurred_at, counts_as_cash, attribution_eligible)
            VALUES (${conversionId}, ${profile.profileId}, ${eventId}, ${sale.json.data.id}, 'sale',
                    (SELECT occurred_at FROM outcome_events WHERE id = ${eventId}), true, true)`
          yield* sql`UPDATE work_jobs SET state = 'succeeded' WHERE profile_id = ${profile.profileId}`
          const response = yield* send(profile.key, "PUT", "/api/v1/profile/outcome-definitions", {
            definitions: [{ conversion_key: "lead", name: "Lead", event_names: ["lead"] }]
          })
          assert.strictEqual(response.status, 200, response.text)
          assert.deepStrictEqual(response.json.data.definitions.map((row: { conversion_key: string }) => row.conversion_key), ["lead"])
          const [conversion] = yield* sql<{ definition_id: string | null; counts_as_cash: boolean; attribution_eligible: boolean; conversion_key: string }>`
            SELECT definition_id, counts_as_cash, attribution_eligible, conversion_key FROM conversions WHERE id = ${conversionId}`
          assert.deepStrictEqual(conversion, { definition_id: null, counts_as_cash: false, attribution_eligible: false, conversion_key: "sale" })
          const queued = (yield* replayJobs(profile.profileId)).filter((job) => job.state === "queued")
          assert.deepStrictEqual(queued.map((job) => job.id), [response.json.meta.replay_job_id])
        }))
    })

    describe("the attribution add-on", () => {
      it.effect("on an app-provisioned profile with the add-on off: PATCH outcome-definitions and recompute are 409 entitlement_required; reads answer empty", () =>
        Effect.gen(function*() {
          const app = yield* registerApp()
          const created = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `merchant-${crypto.randomUUID()}` })).json.data
          const profile: SeededProfile = { profileId: created.profile_id, workspaceId: created.workspace_id }
          const { key } = yield* seedApiKey(profile, { scopes: WRITER })
          const sql = yield* SqlClient
          const definitionId = crypto.randomUUID()
          yield* sql`
            INSERT INTO conversion_definitions (id, profile_id, conversion_key, name, kind, event_names)
            VALUES (${definitionId}, ${profile.profileId}, 'stage', 'Stage', 'pipeline_stage', ${["crm.stage"]})`

          const patch = yield* send(key, "PATCH", `/api/v1/outcome-definitions/${definitionId}`, { event_key: null })
          assert.strictEqual(patch.status, 409)
          assert.strictEqual(patch.json.error.code, "entitlement_required")
          assert.include(patch.json.error.message, "svc_attribution")
          const recompute = yield* send(key, "POST", "/api/v1/attribution/recompute")
          assert.strictEqual(recompute.status, 409)
          assert.strictEqual(recompute.json.error.code, "entitlement_required")
          assert.deepStrictEqual((yield* send(key, "GET", "/api/v1/tracking/replay-status")).json, { data: null })
          assert.deepStrictEqual((yield* send(key, "GET", "/api/v1/goals/definitions")).json, {
            data: [],
            pagination: { has_next: false, cursor: null }
          })
          assert.deepStrictEqual((yield* send(key, "GET", "/api/v1/profile/outcome-definitions")).json, {
            data: { definitions: [], outcomes: [] }
          })
          assert.lengthOf(yield* replayJobs(profile.profileId), 0)

          // With the add-on on, the same key reaches the handler.
          const on = yield* asApp(app, `/api/v1/profiles/${profile.profileId}/entitlements/svc_attribution`, "PUT", { enabled: true })
          assert.strictEqual(on.status, 200)
          // The credential cache carries the tier for up to 5 s.
          const allowed = yield* eventually(
            send(key, "PATCH", `/api/v1/outcome-definitions/${definitionId}`, { event_key: null }),
            (answer) => answer.status !== 409,
            { what: "the add-on to reach the cached credential", within: "7500 millis", every: "250 millis" }
          )
          assert.strictEqual(allowed.status, 200, allowed.text)
          assert.isNull(allowed.json.meta.replay_job_id)
        }))
    })
  }
)
