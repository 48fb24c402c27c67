/**
 * Card-gateway payments end to end (decision 0063) through the sandbox gateway served by the app
 * itself: a merchant account connected through a connect hand-off and the sandbox's consent, a
 * payment made at the gateway pushed to `/hooks/cardgw` and recorded as `POST
 * /api/v1/payments/cardgw` records one, its refund and a lost dispute applied once, replays and
 * syncs writing nothing twice, a bad signature refused with nothing written.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { SyncWorkerSettings, defaultSyncWorkerSettings } from "../../src/ingestion/sync/worker.ts"
import { signCallback } from "../../src/connections/providers/signing.ts"
import { call, callAs, TestServer } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { connectProvider, driveConsent, sandboxSecretOf, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth, withWorld, worldHandle } from "../support/sandbox-world.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "events:write", "conversions:read"]

interface Fixture extends SeededProfile {
  readonly key: string
}

const send = callAs

/** A test-control call on the key's profile's sandbox gateway world (decision 0109). */
const sandbox = (key: string, method: string, path: string, body?: unknown) =>
  call(`/sandbox/cardgw${path}`, {
    method,
    headers: { "content-type": "application/json", ...keyAuth(key) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const profileWithKey = Effect.gen(function*() {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
  return { ...profile, key } satisfies Fixture
})

/** Connects the sandbox merchant account through a hand-off and the consent page, as a person would. */
const connect = (fixture: Fixture) => Effect.map(connectProvider(fixture.key, "cardgw"), (connected) => connected.connectionId)

/** A payment made at the gateway (pushed as `payment.succeeded`); answers the sandbox's payment. */
const arrive = (key: string, customer: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  Effect.map(sandbox(key, "PATCH", "/_state", { arrive: { kind: "payment", customer, ...extra } }), (response) => {
    assert.strictEqual(response.status, 201, response.text)
    return response.json.payment
  })

interface Recorded {
  readonly events: number
  readonly conversions: number
  readonly outbox: number
  readonly refunds: number
}

/** What the profile holds of one gateway payment: its event, its conversion, its outcome.recorded rows, its refund actions. */
const recorded = (profileId: string, gatewayPaymentId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const key = `cardgw:${gatewayPaymentId}`
    const [row] = yield* sql<Recorded>`
      SELECT (SELECT count(*)::int FROM outcome_events WHERE profile_id = ${profileId} AND idempotency_key = ${key}) AS events,
             (SELECT count(*)::int FROM conversions c JOIN outcome_events e ON e.id = c.outcome_event_id
               WHERE e.profile_id = ${profileId} AND e.idempotency_key = ${key}) AS conversions,
             (SELECT count(*)::int FROM outbox o WHERE o.profile_id = ${profileId} AND o.topic = 'outcome.recorded'
               AND o.payload->'data'->>'outcome_event_id' IN
                 (SELECT id::text FROM outcome_events WHERE profile_id = ${profileId} AND idempotency_key = ${key})) AS outbox,
             (SELECT count(*)::int FROM payment_actions a JOIN outcome_events e ON e.id = a.outcome_event_id
               WHERE e.profile_id = ${profileId} AND e.idempotency_key = ${key} AND a.action = 'refund_recorded') AS refunds`
    return row ?? { events: 0, conversions: 0, outbox: 0, refunds: 0 }
  })

const paymentOf = (key: string, outcomeEventId: string) =>
  Effect.map(send(key, "GET", "/api/v1/payments?limit=200"), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return (response.json.data as ReadonlyArray<any>).find((row) => row.outcome_event_id === outcomeEventId)
  })

const eventIdOf = (profileId: string, gatewayPaymentId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ id: string }>`
      SELECT id::text AS id FROM outcome_events WHERE profile_id = ${profileId} AND idempotency_key = ${`cardgw:${gatewayPaymentId}`}`
    return row?.id ?? ""
  })

/**
 * A callback as the gateway sends it, signed with the sandbox app's secret (or another), naming
 * the sandbox world of `profileId` (`x-sandbox-world`, decision 0109).
 */
const hook = (profileId: string, body: unknown, secret = sandboxSecretOf("cardgw")) => {
  const raw = JSON.stringify(body)
  return call("/hooks/cardgw", {
    method: "POST",
    headers: { "content-type": "application/json", ...signCallback("cardgw", secret, raw), "x-sandbox-world": worldHandle(profileId) },
    body: raw
  })
}

const envelope = (type: string, object: unknown, id = `evt_${crypto.randomUUID()}`) => ({
  id,
  type,
  account_id: "acct_cardgw_1001",
  created_at: new Date().toISOString(),
  data: { object }
})

const background = Layer.succeed(SyncWorkerSettings)({
  ...defaultSyncWorkerSettings,
  pollInterval: Duration.millis(100),
  retryBase: Duration.millis(300),
  lease: Duration.seconds(3)
})

const within = { within: "30 seconds", every: "100 millis" } as const

layer(serveAppOnOwnPort().pipe(Layer.provide(background)), { timeout: "180 seconds", excludeTestServices: true })(
  "card-gateway payments",
  (it) => {
    describe("POST /hooks/cardgw", () => {
      it.effect("a payment made at the gateway is pushed and recorded once, with its customer matched by email; a replay writes nothing", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* profileWithKey
          yield* connect(fixture)
          // A customer the service already knows, by email.
          const customerKey = `ana-${crypto.randomUUID().slice(0, 8)}`
          const email = `${customerKey}@example.com`
          const known = yield* send(fixture.key, "POST", "/api/v1/events", {
            event_name: "signup",
            idempotency_key: crypto.randomUUID(),
            user_traits: { external_id: customerKey, email }
          })
          assert.strictEqual(known.status, 200, known.text)

          const payment = yield* arrive(fixture.key, { email: email.toUpperCase(), name: "Ana" }, { amount_minor: 4250, description: "Order 77" })
          const counts = yield* eventually(recorded(fixture.profileId, payment.id), (row) => row.outbox === 1, {
            what: "the pushed payment recorded",
            ...within
          })
          assert.deepStrictEqual(counts, { events: 1, conversions: 1, outbox: 1, refunds: 0 })
          const outcomeEventId = yield* eventIdOf(fixture.profileId, payment.id)
          const [outbox] = yield* sql<{ payload: any }>`
            SELECT payload FROM outbox WHERE profile_id = ${fixture.profileId} AND topic = 'outcome.recorded'
              AND payload->'data'->>'outcome_event_id' = ${outcomeEventId}`
          assert.strictEqual(outbox?.payload.data.provider, "cardgw")
          assert.strictEqual(outbox?.payload.data.customer_key, customerKey)
          const listed = yield* paymentOf(fixture.key, outcomeEventId)
          assert.strictEqual(listed.amount, "42.5")
          assert.strictEqual(listed.currency, "EUR")
          assert.strictEqual(listed.customer_key, customerKey)
          assert.strictEqual(listed.status, "paid")

          // The same callback again (same event id), and the same payment under another event id.
          const replayBody = envelope("payment.succeeded", payment)
          const first = yield* hook(fixture.profileId, replayBody)
          assert.strictEqual(first.status, 200, first.text)
          const again = yield* hook(fixture.profileId, replayBody)
          assert.deepStrictEqual(again.json, { received: true, fresh: false })
          assert.deepStrictEqual(yield* recorded(fixture.profileId, payment.id), counts)
        }))

      it.effect("a refund at the gateway is applied once; a lost dispute refunds, an open one does not", () =>
        Effect.gen(function*() {
          const fixture = yield* profileWithKey
          yield* connect(fixture)
          const payment = yield* arrive(fixture.key, { email: `bo-${crypto.randomUUID().slice(0, 8)}@example.com` }, { amount_minor: 10_000 })
          yield* eventually(recorded(fixture.profileId, payment.id), (row) => row.outbox === 1, { what: "the payment recorded", ...within })

          const refunded = yield* sandbox(fixture.key, "PATCH", "/_state", { objects: [{ id: payment.id, status: "refunded", amount_refunded_minor: 2500 }] })
          assert.strictEqual(refunded.status, 200, refunded.text)
          const counts = yield* eventually(recorded(fixture.profileId, payment.id), (row) => row.refunds === 1, {
            what: "the refund applied",
            ...within
          })
          assert.deepStrictEqual(counts, { events: 1, conversions: 1, outbox: 1, refunds: 1 })
          const outcomeEventId = yield* eventIdOf(fixture.profileId, payment.id)
          const listed = yield* paymentOf(fixture.key, outcomeEventId)
          assert.strictEqual(listed.status, "refunded")
          assert.strictEqual(listed.refunded.amount, "25")

          // The refund's callback delivered again under a new event id: nothing changes.
          const state = yield* sandbox(fixture.key, "GET", "/_state")
          const now = (state.json.payments as ReadonlyArray<any>).find((row) => row.id === payment.id)
          const replay = yield* hook(fixture.profileId, envelope("payment.refunded", now))
          assert.strictEqual(replay.status, 200, replay.text)
          assert.deepStrictEqual(yield* recorded(fixture.profileId, payment.id), counts)

          // Disputes: an open one records nothing more; a lost one refunds the disputed amount.
          const disputed = yield* arrive(fixture.key, { email: `cy-${crypto.randomUUID().slice(0, 8)}@example.com` }, { amount_minor: 3000 })
          yield* eventually(recorded(fixture.profileId, disputed.id), (row) => row.outbox === 1, { what: "the payment recorded", ...within })
          const open = yield* sandbox(fixture.key, "PATCH", "/_state", { objects: [{ id: disputed.id, dispute: { status: "open" } }] })
          assert.strictEqual(open.status, 200, open.text)
          // The sandbox delivers its pushes before it answers: the open dispute was handled by now.
          assert.deepStrictEqual(yield* recorded(fixture.profileId, disputed.id), { events: 1, conversions: 1, outbox: 1, refunds: 0 })
          const lost = yield* sandbox(fixture.key, "PATCH", "/_state", { objects: [{ id: disputed.id, dispute: { status: "lost" } }] })
          assert.strictEqual(lost.status, 200, lost.text)
          const afterDispute = yield* eventually(recorded(fixture.profileId, disputed.id), (row) => row.refunds === 1, {
            what: "the lost dispute applied",
            ...within
          })
          assert.deepStrictEqual(afterDispute, { events: 1, conversions: 1, outbox: 1, refunds: 1 })
          const disputedRow = yield* paymentOf(fixture.key, yield* eventIdOf(fixture.profileId, disputed.id))
          assert.strictEqual(disputedRow.refunded.amount, "30")
        }))

      it.effect("a callback with a bad signature is refused (401) and writes nothing", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* profileWithKey
          yield* connect(fixture)
          const forged = {
            id: `pay_forged_${crypto.randomUUID().slice(0, 8)}`,
            amount_minor: 999,
            amount_refunded_minor: 0,
            currency: "EUR",
            status: "succeeded",
            description: null,
            customer: { id: null, email: "eve@example.com", phone: null, name: null },
            metadata: {},
            created_at: new Date().toISOString(),
            refunded_at: null
          }
          const body = envelope("payment.succeeded", forged)
          const response = yield* hook(fixture.profileId, body, "not-the-secret")
          assert.strictEqual(response.status, 401, response.text)
          assert.deepStrictEqual(yield* recorded(fixture.profileId, forged.id), { events: 0, conversions: 0, outbox: 0, refunds: 0 })
          const [seen] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM provider_events WHERE event_id = ${body.id}`
          assert.strictEqual(seen?.n, 0)
        }))
    })

    describe("a grant death", () => {
      it.effect("the gateway's deauthorization marks the connection reconnect_required, once", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* profileWithKey
          yield* connect(fixture)
          const faults = (revoke: boolean) =>
            Effect.map(sandbox(fixture.key, "POST", "/_faults", { revoke_tokens: revoke }), (r) => assert.strictEqual(r.status, 200, r.text))
          yield* faults(true)
          const list = yield* eventually(
            send(fixture.key, "GET", "/api/v1/connections"),
            (r) => r.json.data[0]?.status === "reconnect_required",
            { what: "the connection to need a reconnect", ...within }
          )
          assert.strictEqual(list.json.data[0].status_reason, "grant_revoked")
          const [row] = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM outbox WHERE profile_id = ${fixture.profileId} AND topic = 'connection.reconnect_required'`
          assert.strictEqual(row?.n, 1)
          yield* faults(false)
        }))
    })

    describe("cardgw sync", () => {
      it.effect("a sync records the account's payments, those made while unsubscribed included, exactly once", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* profileWithKey
          const connectionId = yield* connect(fixture)
          const sync = Effect.gen(function*() {
            const triggered = yield* send(fixture.key, "POST", "/api/v1/connections/sync", { connection_id: connectionId })
            assert.strictEqual(triggered.status, 202, triggered.text)
            const jobId: string = triggered.json.data[0].job_id
            const job = yield* eventually(
              Effect.map(send(fixture.key, "GET", `/api/v1/connections/sync/${jobId}`), (response) => response.json.data),
              (job) => ["done", "failed", "cancelled"].includes(job.status),
              { what: "the cardgw sync to finish", within: "60 seconds", every: "100 millis" }
            )
            assert.strictEqual(job.status, "done", JSON.stringify(job))
          })
          const totals = Effect.map(
            sql<{ events: number; outbox: number; refunds: number }>`
              SELECT (SELECT count(*)::int FROM outcome_events WHERE profile_id = ${fixture.profileId} AND source = 'cardgw') AS events,
                     (SELECT count(*)::int FROM outbox WHERE profile_id = ${fixture.profileId} AND topic = 'outcome.recorded') AS outbox,
                     (SELECT count(*)::int FROM payment_actions WHERE profile_id = ${fixture.profileId} AND action = 'refund_recorded') AS refunds`,
            (rows) => rows[0] ?? { events: 0, outbox: 0, refunds: 0 }
          )
          yield* sync
          const first = yield* totals
          assert.isAtLeast(first.events, 40)
          assert.strictEqual(first.outbox, first.events)
          // The gateway's refunded payments come refunded, each once.
          const state = yield* sandbox(fixture.key, "GET", "/_state")
          const refundedAtGateway = (state.json.payments as ReadonlyArray<any>).filter((p) =>
            p.account_id === "acct_cardgw_1001" && p.status === "refunded"
          ).length
          assert.isAbove(refundedAtGateway, 0)
          assert.strictEqual(first.refunds, refundedAtGateway)

          // The push channel closed (by another grant of the account, as the gateway's dashboard would):
          // a payment made now reaches the service only through the next sync.
          const { url } = yield* TestServer
          const redirectUri = "http://127.0.0.1:9/callback"
          // In this profile's sandbox world (decision 0109), where its connection's subscription is.
          const consent = yield* driveConsent(withWorld(
            `${url}/sandbox/cardgw/oauth/authorize?client_id=sandbox-cardgw&redirect_uri=${encodeURIComponent(redirectUri)}&state=s`,
            fixture.profileId
          ))
          const code = new URL(consent.location ?? "http://invalid/").searchParams.get("code") ?? ""
          const token = yield* call("/sandbox/cardgw/oauth/token", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({
              grant_type: "authorization_code",
              code,
              redirect_uri: redirectUri,
              client_id: "sandbox-cardgw",
              client_secret: sandboxSecretOf("cardgw")
            })
          })
          assert.strictEqual(token.status, 200, token.text)
          const unsubscribe = yield* call("/sandbox/cardgw/v1/accounts/acct_cardgw_1001/subscriptions", {
            method: "DELETE",
            headers: { authorization: `Bearer ${token.json.access_token}` }
          })
          assert.strictEqual(unsubscribe.status, 200, unsubscribe.text)
          assert.deepStrictEqual((yield* sandbox(fixture.key, "GET", "/_state")).json.subscriptions, [])
          const missed = yield* arrive(fixture.key, { email: `dee-${crypto.randomUUID().slice(0, 8)}@example.com` }, { amount_minor: 1200 })
          assert.deepStrictEqual(yield* recorded(fixture.profileId, missed.id), { events: 0, conversions: 0, outbox: 0, refunds: 0 })
          yield* sync
          const counts = yield* recorded(fixture.profileId, missed.id)
          assert.deepStrictEqual(counts, { events: 1, conversions: 1, outbox: 1, refunds: 0 })
          // A sync again records nothing new.
          const before = yield* totals
          yield* sync
          assert.deepStrictEqual(yield* totals, before)
        }))
    })
  }
)
