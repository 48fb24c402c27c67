/**
 * CRM deals become outcomes (decision 0062) over real HTTP against the sandbox CRM the app serves:
 * the CRM connected through a hand-off and the sandbox's consent, a stage mapped through the
 * outcome-definition routes, deals moved with `PATCH /sandbox/crm/_state` (pushed, signed, to
 * `/hooks/crm`) and synced with `POST /api/v1/connections/sync`. One outcome per deal and stage,
 * whichever way it arrives and however often.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { createHmac } from "node:crypto"
import { defaultSyncWorkerSettings, SyncWorker, SyncWorkerSettings } from "../../src/ingestion/sync/worker.ts"
import { call, callAs } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { connectProvider, sandboxSecretOf, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth, worldHandle } from "../support/sandbox-world.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "goals:write", "conversions:read", "events:write"]
const PORTAL = "crm_portal_1001"
const SALES = "pipe_1001_sales"
const WON = "stage_1001_sales_won"
const QUALIFIED = "stage_1001_sales_qualified"

interface Fixture extends SeededProfile {
  readonly key: string
}

const send = callAs

/** A test-control call on the key's profile's sandbox CRM world (decision 0109). */
const sandbox = (key: string, method: string, path: string, body?: unknown) =>
  call(`/sandbox/crm${path}`, {
    method,
    headers: { "content-type": "application/json", ...keyAuth(key) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** A profile whose `purchase` outcome has a definition, and a customer `cust-<n>` known by `email`. */
const fixture = (email: string) =>
  Effect.gen(function*() {
    const profile = yield* seedProfile()
    const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
    const goal = yield* send(key, "POST", "/api/v1/goals/definitions", {
      conversion_key: "purchase",
      name: "Purchase",
      event_names: ["purchase"],
      counts_as_cash: true
    })
    assert.strictEqual(goal.status, 201, goal.text)
    const customerKey = `cust-${crypto.randomUUID()}`
    const known = yield* send(key, "POST", "/api/v1/events", {
      event_name: "signup",
      idempotency_key: `signup-${customerKey}`,
      user_traits: { external_id: customerKey, email }
    })
    assert.strictEqual(known.status, 200, known.text)
    return { fixture: { ...profile, key } satisfies Fixture, customerKey }
  })

/** Maps the won stage to `purchase` through PUT /api/v1/profile/outcome-definitions (a `pipeline_stage` definition). */
const mapWon = (key: string) =>
  Effect.gen(function*() {
    const read = yield* send(key, "GET", "/api/v1/profile/outcome-definitions")
    const kept = (read.json.data.definitions as ReadonlyArray<any>).map((d) => ({
      conversion_key: d.conversion_key,
      name: d.name,
      event_names: d.event_names,
      counts_as_cash: d.counts_as_cash
    }))
    const put = yield* send(key, "PUT", "/api/v1/profile/outcome-definitions", {
      definitions: [
        ...kept,
        { conversion_key: "crm_won", name: "Deal won", kind: "pipeline_stage", event_names: [`crm.stage.${WON}`], event_key: "purchase" }
      ]
    })
    assert.strictEqual(put.status, 200, put.text)
    const stages = yield* send(key, "GET", "/api/v1/connections/crm/stages")
    const won = (stages.json.data.stages as ReadonlyArray<any>).find((s) => s.id === WON)
    assert.deepStrictEqual([won?.current.outcome, won?.current.source], ["purchase", "user"])
  })

/** Connects the sandbox CRM as a person would: mint, consent, back through the service's callback. */
const connectCrm = (key: string) => Effect.map(connectProvider(key, "crm"), (connected) => connected.connectionId)

/** A new deal in the sales pipeline's first stage, its contact known by `email`; answers the deal. */
const newDeal = (key: string, email: string) =>
  Effect.gen(function*() {
    const arrived = yield* sandbox(key, "PATCH", "/_state", {
      arrive: {
        kind: "deal",
        account_id: PORTAL,
        pipeline_id: SALES,
        name: "Test deal",
        amount_minor: 123456,
        currency: "EUR",
        contact: { email: email.toUpperCase(), phone: null, first_name: "Ana", last_name: "Test" }
      }
    })
    assert.strictEqual(arrived.status, 201, arrived.text)
    return arrived.json.deal as { id: string; contact: { id: string } }
  })

const moveDeal = (key: string, dealId: string, stageId: string) =>
  Effect.map(sandbox(key, "PATCH", "/_state", { objects: [{ id: dealId, stage_id: stageId }] }), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return response.json
  })

/** The `outcome.recorded` rows of the profile for CRM deals with this deal's outcome. */
const crmRows = (profileId: string, dealId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ payload: { data: Record<string, any> } }>`
      SELECT o.payload FROM outbox o JOIN outcome_events e ON e.id = (o.payload->'data'->>'outcome_event_id')::uuid
      WHERE o.profile_id = ${profileId} AND o.topic = 'outcome.recorded' AND o.payload->'data'->>'provider' = 'crm'
        AND e.idempotency_key LIKE ${`crm:${PORTAL}:${dealId}:%`}
      ORDER BY o.created_at`)

const eventsOfDeal = (profileId: string, dealId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ idempotency_key: string; event_name: string; source: string }>`
      SELECT idempotency_key, event_name, source FROM outcome_events
      WHERE profile_id = ${profileId} AND idempotency_key LIKE ${`crm:${PORTAL}:${dealId}:%`}`)

/**
 * A CRM callback signed as the sandbox signs (or with a wrong secret), naming the world of
 * `profileId` as the sandbox does (`x-sandbox-world`, decision 0109), or the `world` given (null: none).
 */
const pushDeal = (
  profileId: string,
  deal: unknown,
  options: { readonly id?: string; readonly secret?: string; readonly world?: string | null } = {}
) => {
  const body = JSON.stringify({
    id: options.id ?? `evt_${crypto.randomUUID()}`,
    type: "deal.stage_changed",
    account_id: PORTAL,
    created_at: new Date().toISOString(),
    data: { object: deal, previous_stage_id: QUALIFIED }
  })
  const timestamp = Math.floor(Date.now() / 1000)
  const signature = createHmac("sha256", options.secret ?? sandboxSecretOf("crm")).update(`${timestamp}.${body}`, "utf8").digest("hex")
  const world = options.world === undefined ? worldHandle(profileId) : options.world
  return call("/hooks/crm", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-signature-timestamp": String(timestamp),
      "x-signature-256": `sha256=${signature}`,
      ...(world === null ? {} : { "x-sandbox-world": world })
    },
    body
  })
}

const currentDeal = (key: string, dealId: string) =>
  Effect.map(sandbox(key, "GET", "/_state"), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return (response.json.deals as ReadonlyArray<any>).find((d) => d.id === dealId)
  })

const syncOnce = (key: string, connectionId: string) =>
  Effect.gen(function*() {
    const queued = yield* send(key, "POST", "/api/v1/connections/sync", { connection_id: connectionId })
    assert.strictEqual(queued.status, 202, queued.text)
    const jobId: string = queued.json.data[0].job_id
    const job = yield* eventually(
      Effect.map(send(key, "GET", `/api/v1/connections/sync/${jobId}`), (r) => r.json.data),
      (j) => ["done", "failed", "cancelled"].includes(j.status),
      { what: `sync job ${jobId} to finish`, within: "60 seconds" }
    )
    assert.strictEqual(job.status, "done", JSON.stringify(job))
  })

const background = Layer.succeed(SyncWorkerSettings)({
  ...defaultSyncWorkerSettings,
  pollInterval: Duration.millis(100),
  retryBase: Duration.millis(300),
  lease: Duration.seconds(3)
})

layer(serveAppOnOwnPort().pipe(Layer.provide(background)), { timeout: "180 seconds", excludeTestServices: true })((it) => {
  describe("CRM deals become outcomes", () => {
    it.effect("a deal pushed at a mapped stage: one outcome with its outcome.recorded row, customer by email, credited; never twice", () =>
      Effect.gen(function*() {
        const email = `buyer-${crypto.randomUUID()}@example.com`
        const { customerKey, fixture: profile } = yield* fixture(email)
        const connectionId = yield* connectCrm(profile.key)
        yield* mapWon(profile.key)

        const deal = yield* newDeal(profile.key, email)
        // Created at the first (unmapped) stage, then qualified (unmapped): nothing.
        yield* moveDeal(profile.key, deal.id, QUALIFIED)
        assert.strictEqual((yield* eventsOfDeal(profile.profileId, deal.id)).length, 0)

        const moved = yield* moveDeal(profile.key, deal.id, WON)
        assert.isTrue((moved.deliveries as ReadonlyArray<any>).some((d) => d.status === 200), JSON.stringify(moved.deliveries))
        const rows = yield* eventually(crmRows(profile.profileId, deal.id), (r) => r.length >= 1, {
          what: "the pushed deal's outcome.recorded row",
          within: "10 seconds"
        })
        assert.strictEqual(rows.length, 1)
        const data = rows[0]!.payload.data
        assert.strictEqual(data["provider"], "crm")
        assert.strictEqual(data["outcome_type"], "purchase")
        assert.strictEqual(data["customer_key"], customerKey)
        assert.strictEqual(data["value"], "1234.56")
        assert.strictEqual(data["currency"], "EUR")
        assert.isString(data["conversion_id"])
        assert.deepStrictEqual(yield* eventsOfDeal(profile.profileId, deal.id), [
          { idempotency_key: `crm:${PORTAL}:${deal.id}:${WON}`, event_name: "purchase", source: "crm" }
        ])
        // The attribution worker credits the new conversion (under every model).
        yield* eventually(
          Effect.flatMap(SqlClient, (sql) =>
            sql<{ credited: boolean }>`
              SELECT c.id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM credit_queue q WHERE q.conversion_id = c.id) AS credited
              FROM conversions c WHERE c.id = ${data["conversion_id"]}`),
          (r) => r[0]?.credited === true,
          { what: "the conversion credited", within: "30 seconds" }
        )

        // Away and back to the same stage, the callback replayed, a new callback for the same stage, a sync: nothing new.
        yield* moveDeal(profile.key, deal.id, QUALIFIED)
        yield* moveDeal(profile.key, deal.id, WON)
        const now = yield* currentDeal(profile.key, deal.id)
        const eventId = `evt_${crypto.randomUUID()}`
        const first = yield* pushDeal(profile.profileId, now, { id: eventId })
        assert.strictEqual(first.status, 200, first.text)
        const replay = yield* pushDeal(profile.profileId, now, { id: eventId })
        assert.deepStrictEqual(replay.json, { received: true, fresh: false })
        yield* syncOnce(profile.key, connectionId)
        assert.strictEqual((yield* crmRows(profile.profileId, deal.id)).length, 1)
        assert.strictEqual((yield* eventsOfDeal(profile.profileId, deal.id)).length, 1)
      }))

    it.effect("a deal at an unmapped stage records nothing; a callback with a bad signature is 401 and writes nothing", () =>
      Effect.gen(function*() {
        const email = `lost-${crypto.randomUUID()}@example.com`
        const { fixture: profile } = yield* fixture(email)
        yield* connectCrm(profile.key)
        yield* mapWon(profile.key)
        const deal = yield* newDeal(profile.key, email)
        yield* moveDeal(profile.key, deal.id, "stage_1001_sales_lost")
        yield* moveDeal(profile.key, deal.id, QUALIFIED)
        assert.strictEqual((yield* eventsOfDeal(profile.profileId, deal.id)).length, 0)

        const atWon = { ...(yield* currentDeal(profile.key, deal.id)), stage_id: WON }
        const eventId = `evt_${crypto.randomUUID()}`
        const forged = yield* pushDeal(profile.profileId, atWon, { id: eventId, secret: "not-the-secret" })
        assert.strictEqual(forged.status, 401, forged.text)
        assert.strictEqual((yield* eventsOfDeal(profile.profileId, deal.id)).length, 0)
        // Signed right but naming no sandbox world, or a world handle that is not this service's: 401 too (decision 0109).
        const [mac = ""] = worldHandle(profile.profileId).split(".").slice(1)
        for (const world of [null, `${profile.profileId}.${mac.replace(/./g, "0")}`, crypto.randomUUID()]) {
          const unnamed = yield* pushDeal(profile.profileId, atWon, { id: eventId, world })
          assert.strictEqual(unnamed.status, 401, unnamed.text)
          assert.strictEqual(unnamed.json.error.reason, "bad_signature", unnamed.text)
        }
        assert.strictEqual((yield* eventsOfDeal(profile.profileId, deal.id)).length, 0)
        const seen = yield* Effect.flatMap(SqlClient, (sql) =>
          sql<{ n: number }>`SELECT count(*)::int AS n FROM provider_events WHERE provider = 'crm' AND event_id = ${eventId}`)
        assert.strictEqual(Number(seen[0]?.n), 0)
      }))

    it.effect("a sync picks up a deal moved while the profile had no push channel, once; a later push adds nothing", () =>
      Effect.gen(function*() {
        const email = `synced-${crypto.randomUUID()}@example.com`
        const { customerKey, fixture: profile } = yield* fixture(email)
        // Moved before this profile connected: no callback reaches it.
        const deal = yield* newDeal(profile.key, email)
        yield* moveDeal(profile.key, deal.id, WON)
        const connectionId = yield* connectCrm(profile.key)
        yield* mapWon(profile.key)
        assert.strictEqual((yield* eventsOfDeal(profile.profileId, deal.id)).length, 0)

        yield* syncOnce(profile.key, connectionId)
        const rows = yield* crmRows(profile.profileId, deal.id)
        assert.strictEqual(rows.length, 1)
        assert.strictEqual(rows[0]!.payload.data["customer_key"], customerKey)
        assert.strictEqual(rows[0]!.payload.data["provider"], "crm")

        // Synced again, then the callback arriving late: still one.
        yield* syncOnce(profile.key, connectionId)
        const late = yield* pushDeal(profile.profileId, yield* currentDeal(profile.key, deal.id))
        assert.strictEqual(late.status, 200, late.text)
        assert.strictEqual((yield* crmRows(profile.profileId, deal.id)).length, 1)
        assert.strictEqual((yield* eventsOfDeal(profile.profileId, deal.id)).length, 1)
      }))

    it.effect("a deal created at a mapped stage: deal.created records it, its customer found by the CRM contact id", () =>
      Effect.gen(function*() {
        const { fixture: profile } = yield* fixture(`other-${crypto.randomUUID()}@example.com`)
        yield* connectCrm(profile.key)
        yield* mapWon(profile.key)
        const contactId = `contact_${crypto.randomUUID()}`
        const customerKey = `crm-cust-${crypto.randomUUID()}`
        const known = yield* send(profile.key, "POST", "/api/v1/events", {
          event_name: "signup",
          idempotency_key: `signup-${customerKey}`,
          user_traits: { external_id: customerKey, crm_contact_id: contactId }
        })
        assert.strictEqual(known.status, 200, known.text)
        const arrived = yield* sandbox(profile.key, "PATCH", "/_state", {
          arrive: { kind: "deal", account_id: PORTAL, pipeline_id: SALES, stage_id: WON, amount_minor: 5000, contact: { id: contactId } }
        })
        assert.strictEqual(arrived.status, 201, arrived.text)
        const dealId: string = arrived.json.deal.id
        const rows = yield* eventually(crmRows(profile.profileId, dealId), (r) => r.length >= 1, {
          what: "the created deal's outcome.recorded row",
          within: "10 seconds"
        })
        assert.strictEqual(rows.length, 1)
        assert.strictEqual(rows[0]!.payload.data["customer_key"], customerKey)
        assert.strictEqual(rows[0]!.payload.data["value"], "50")
      }))

    it.effect("an event definition listing the stage's event name: the stage is recorded under that name, its own conversion", () =>
      Effect.gen(function*() {
        const email = `qualified-${crypto.randomUUID()}@example.com`
        const { fixture: profile } = yield* fixture(email)
        yield* connectCrm(profile.key)
        const goal = yield* send(profile.key, "POST", "/api/v1/goals/definitions", {
          conversion_key: "qualified_lead",
          name: "Qualified lead",
          event_names: [`crm.stage.${QUALIFIED}`]
        })
        assert.strictEqual(goal.status, 201, goal.text)
        const deal = yield* newDeal(profile.key, email)
        yield* moveDeal(profile.key, deal.id, QUALIFIED)
        const rows = yield* eventually(crmRows(profile.profileId, deal.id), (r) => r.length >= 1, {
          what: "the qualified deal's outcome.recorded row",
          within: "10 seconds"
        })
        assert.strictEqual(rows[0]!.payload.data["outcome_type"], `crm.stage.${QUALIFIED}`)
        const conversion = yield* Effect.flatMap(SqlClient, (sql) =>
          sql<{ conversion_key: string }>`SELECT conversion_key FROM conversions WHERE id = ${rows[0]!.payload.data["conversion_id"]}`)
        assert.strictEqual(conversion[0]?.conversion_key, "qualified_lead")
      }))

    it.effect("while the CRM cannot be read the callback is 503 and writes nothing; the redelivery records it", () =>
      Effect.gen(function*() {
        const email = `down-${crypto.randomUUID()}@example.com`
        const { fixture: profile } = yield* fixture(email)
        yield* connectCrm(profile.key)
        yield* mapWon(profile.key)
        const deal = yield* newDeal(profile.key, email)
        const atWon = { ...(yield* currentDeal(profile.key, deal.id)), stage_id: WON }
        const faults = (body: Record<string, unknown>) =>
          Effect.map(sandbox(profile.key, "POST", "/_faults", body), (r) => assert.strictEqual(r.status, 200, r.text))
        yield* faults({ error_rate: 1 })
        const eventId = `evt_${crypto.randomUUID()}`
        const refused = yield* pushDeal(profile.profileId, atWon, { id: eventId }).pipe(Effect.ensuring(Effect.orDie(faults({ error_rate: 0 }))))
        assert.strictEqual(refused.status, 503, refused.text)
        assert.strictEqual((yield* eventsOfDeal(profile.profileId, deal.id)).length, 0)
        const again = yield* pushDeal(profile.profileId, atWon, { id: eventId })
        assert.deepStrictEqual(again.json, { received: true, fresh: true })
        assert.strictEqual((yield* crmRows(profile.profileId, deal.id)).length, 1)
      }))

    it.effect("the nightly run queues a CRM connection's sync, which records a missed deal once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const email = `nightly-${crypto.randomUUID()}@example.com`
        const { fixture: profile } = yield* fixture(email)
        const deal = yield* newDeal(profile.key, email)
        yield* moveDeal(profile.key, deal.id, WON)
        const connectionId = yield* connectCrm(profile.key)
        yield* mapWon(profile.key)
        const worker = yield* SyncWorker
        yield* worker.enqueueNightly
        const jobs = yield* sql<{ kind: string }>`SELECT kind FROM sync_jobs WHERE connection_id = ${connectionId} AND reason = 'nightly'`
        assert.deepStrictEqual(jobs.map((job) => job.kind), ["structure"])
        yield* eventually(
          sql<{ n: number }>`SELECT count(*)::int AS n FROM sync_jobs WHERE connection_id = ${connectionId} AND status = 'done'`,
          (rows) => Number(rows[0]?.n) === 1,
          { what: "the nightly CRM job done", within: "60 seconds" }
        )
        assert.strictEqual((yield* crmRows(profile.profileId, deal.id)).length, 1)
      }))

    it.effect("POST /api/v1/events refuses the CRM's key prefix", () =>
      Effect.gen(function*() {
        const { fixture: profile } = yield* fixture(`prefix-${crypto.randomUUID()}@example.com`)
        const refused = yield* send(profile.key, "POST", "/api/v1/events", { event_name: "purchase", idempotency_key: "crm:x:y:z" })
        assert.strictEqual(refused.status, 400, refused.text)
        assert.strictEqual(refused.json.error.code, "validation_error")
      }))
  })
})
