/**
 * A backlog you can see and bound (issue 34 item 6, decision 0120): a subscription's read carries
 * its `backlog` (depth, oldest's age, the last minute's successes) as deliveries wait and go out;
 * `/metrics` shows the subscriptions waiting longest; a paused subscription's deliveries older
 * than 72 hours end `failed` (`paused_backlog_expired`), its `status_reason` says so, and the rest
 * of their batch still goes out, in order, on resume.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { createServer } from "node:http"
import { defaultWebhookSettings, WebhookSettings } from "../../src/webhooks/delivery/service.ts"
import { WebhookSubscriptions } from "../../src/webhooks/subscriptions/service.ts"
import { call, callAs, OPERATOR_TOKEN, serveApp, testSettings } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { parseExposition } from "../support/prometheus.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

/** A subscriber's endpoint answering 200, recording each event id. */
const receiver = Effect.acquireRelease(
  Effect.callback<{ url: string; ids: Array<string>; close: () => void }>((resume) => {
    const ids: Array<string> = []
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        ids.push(JSON.parse(Buffer.concat(chunks).toString("utf8")).id)
        response.writeHead(200).end()
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}/hooks`, ids, close: () => server.close() }))
    })
  }),
  (server) => Effect.sync(() => server.close())
)

const send = callAs

const fixture = Effect.fn("test.backlogFixture")(function*() {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes: ["connections:read", "connections:write"], rateLimitPerMinute: 10_000 })
  return { ...profile, key }
})

/** A subscription, paused before anything is queued for it. */
const pausedSubscription = Effect.fn("test.pausedSubscription")(function*(key: string, url: string) {
  const created = yield* send(key, "POST", "/api/v1/webhooks/subscriptions", { url })
  assert.strictEqual(created.status, 201, created.text)
  assert.deepStrictEqual(created.json.data.backlog, { pending: 0, pending_capped: false, oldest_pending_age_seconds: null, delivered_last_minute: 0 })
  const id: string = created.json.data.id
  const paused = yield* send(key, "PATCH", `/api/v1/webhooks/subscriptions/${id}`, { status: "paused" })
  assert.strictEqual(paused.json.data.status, "paused")
  return id
})

/** Outbox rows as one producer call writes them (one batch), oldest first. */
const outcomeRows = Effect.fn("test.outcomeRows")(function*(profile: SeededProfile, count: number) {
  const sql = yield* SqlClient
  const ids = Array.from({ length: count }, () => crypto.randomUUID())
  const payloads = ids.map((id, index) => ({
    id,
    type: "outcome.recorded",
    created_at: new Date().toISOString(),
    data: { provider: "crm", outcome_type: "purchase", occurred_at: "2026-11-01T10:00:00Z", customer_key: `c-${index}`, value: "1.00", currency: "EUR" },
    delivery: { profile_id: profile.profileId, provisioned_by_app_id: null, healthcare_family: false, customer_id: null }
  }))
  yield* sql`
    INSERT INTO outbox (id, profile_id, topic, payload, created_at)
    SELECT id, ${profile.profileId}, 'outcome.recorded', payload, now() + make_interval(secs => n / 1000.0)
    FROM unnest(${ids}::uuid[], ${payloads.map((p) => JSON.stringify(p))}::jsonb[]) WITH ORDINALITY AS t(id, payload, n)`
  return ids
})

const subscriptionRead = (key: string, id: string) =>
  Effect.map(send(key, "GET", "/api/v1/webhooks/subscriptions?limit=100"), (answer) => {
    assert.strictEqual(answer.status, 200, answer.text)
    const found = (answer.json.data as ReadonlyArray<any>).find((row) => row.id === id)
    assert.isDefined(found)
    return found
  })

const deliveriesOf = (key: string, subscriptionId: string) =>
  Effect.map(send(key, "GET", `/api/v1/webhooks/deliveries?subscription_id=${subscriptionId}&limit=100`), (answer) => {
    assert.strictEqual(answer.status, 200, answer.text)
    return answer.json.data as ReadonlyArray<any>
  })

/** Makes a subscription's waiting deliveries look queued `seconds` earlier (`first` only: the first n of them by position). */
const backdate = Effect.fn("test.backdate")(function*(subscriptionId: string, seconds: number, first?: number) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE webhook_deliveries SET created_at = created_at - make_interval(secs => ${seconds})
    WHERE subscription_id = ${subscriptionId} AND status = 'pending'
      AND (${first ?? null}::int IS NULL OR seq < ${first ?? 0})`
})

/** One round of the drop, as the minute's worker runs it. */
const dropNow = Effect.gen(function*() {
  const subscriptions = yield* WebhookSubscriptions
  return yield* subscriptions.dropPausedBacklog
}).pipe(Effect.provide(WebhookSubscriptions.layer))

const background = Layer.succeed(WebhookSettings)({
  ...defaultWebhookSettings,
  pollInterval: Duration.millis(100),
  lease: Duration.seconds(3),
  ladder: [Duration.zero, Duration.millis(400)],
  timeout: Duration.seconds(2)
})

layer(serveApp(testSettings({ webhookAllowHosts: ["127.0.0.1"] })).pipe(Layer.provide(background)), {
  timeout: "120 seconds",
  excludeTestServices: true
})("webhook backlogs", (it) => {
  it.effect("the read's backlog: depth and the oldest's age while paused; after resume nothing waits and the minute's successes count", () =>
    Effect.gen(function*() {
      const world = yield* fixture()
      const hooks = yield* receiver
      const id = yield* pausedSubscription(world.key, hooks.url)
      yield* outcomeRows(world, 3)
      yield* eventually(deliveriesOf(world.key, id), (rows) => rows.length === 3, { what: "three queued deliveries", within: "5 seconds" })
      yield* backdate(id, 600)
      const waiting = (yield* subscriptionRead(world.key, id)).backlog
      assert.deepStrictEqual(Object.keys(waiting), ["pending", "pending_capped", "oldest_pending_age_seconds", "delivered_last_minute"])
      assert.strictEqual(waiting.pending, 3)
      assert.strictEqual(waiting.pending_capped, false)
      assert.strictEqual(waiting.delivered_last_minute, 0)
      assert.isAtLeast(waiting.oldest_pending_age_seconds, 599)
      assert.isAtMost(waiting.oldest_pending_age_seconds, 605)

      const resumed = yield* send(world.key, "PATCH", `/api/v1/webhooks/subscriptions/${id}`, { status: "active" })
      assert.strictEqual(resumed.status, 200, resumed.text)
      assert.strictEqual(resumed.json.data.backlog.pending, 3)
      yield* eventually(Effect.sync(() => hooks.ids.length), (n) => n >= 3, { what: "the held deliveries", within: "10 seconds" })
      const drained = yield* eventually(subscriptionRead(world.key, id), (row) => row.backlog.pending === 0, { what: "nothing waiting", within: "5 seconds" })
      assert.deepStrictEqual(drained.backlog, { pending: 0, pending_capped: false, oldest_pending_age_seconds: null, delivered_last_minute: 3 })
    }))

  it.effect("/metrics shows the subscription waiting longest with its depth and age, by svc_subscription", () =>
    Effect.gen(function*() {
      const world = yield* fixture()
      const hooks = yield* receiver
      const id = yield* pausedSubscription(world.key, hooks.url)
      yield* outcomeRows(world, 2)
      yield* eventually(deliveriesOf(world.key, id), (rows) => rows.length === 2, { what: "two queued deliveries", within: "5 seconds" })
      // Under the 72-hour bound, older than anything else here: the first of the leaders.
      yield* backdate(id, 71 * 3600)
      const scraped = yield* call("/metrics", { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
      assert.strictEqual(scraped.status, 200)
      const families = parseExposition(scraped.text)
      const sample = (name: string) =>
        families.get(name)?.samples.find((row) => row.labels["svc_subscription"] === id)?.value
      assert.strictEqual(families.get("svc_webhook_backlog_pending")?.type, "gauge")
      assert.isTrue((families.get("svc_webhook_backlog_pending")?.help ?? "").length > 0)
      assert.strictEqual(sample("svc_webhook_backlog_pending"), 2)
      assert.strictEqual(sample("svc_webhook_delivered_last_minute"), 0)
      assert.isAtLeast(sample("svc_webhook_backlog_oldest_age") ?? 0, 71 * 3600 - 1)
      assert.isAtMost(families.get("svc_webhook_backlog_pending")?.samples.length ?? 0, 10)
      // The destinations' families are declared even with none waiting.
      assert.strictEqual(families.get("svc_export_backlog_pending")?.type, "gauge")
    }))

  it.effect("a paused subscription's deliveries past 72 hours end failed (paused_backlog_expired); the rest of the batch goes out on resume", () =>
    Effect.gen(function*() {
      const world = yield* fixture()
      const hooks = yield* receiver
      const id = yield* pausedSubscription(world.key, hooks.url)
      const events = yield* outcomeRows(world, 4)
      yield* eventually(deliveriesOf(world.key, id), (rows) => rows.length === 4, { what: "four queued deliveries", within: "5 seconds" })
      // The batch's first two are past the bound, the other two are not.
      yield* backdate(id, 72 * 3600 + 60, 2)
      const dropped = yield* dropNow
      assert.isAtLeast(dropped, 1)

      const rows = yield* deliveriesOf(world.key, id)
      const failed = rows.filter((row) => row.status === "failed")
      assert.deepStrictEqual(failed.map((row) => row.event_id).sort(), events.slice(0, 2).sort())
      for (const row of failed) {
        assert.strictEqual(row.last_error, "paused_backlog_expired")
        assert.isNotNull(row.completed_at)
        assert.strictEqual(row.attempts, 0)
      }
      const read = yield* subscriptionRead(world.key, id)
      assert.strictEqual(read.status, "paused")
      assert.strictEqual(read.status_reason, "paused_backlog_dropped")
      assert.strictEqual(read.backlog.pending, 2)
      assert.isAtMost(read.backlog.oldest_pending_age_seconds, 5)
      // Nothing more to drop: a second run ends nothing.
      assert.strictEqual(
        yield* dropNow,
        0
      )

      const resumed = yield* send(world.key, "PATCH", `/api/v1/webhooks/subscriptions/${id}`, { status: "active" })
      assert.strictEqual(resumed.json.data.status_reason, null)
      yield* eventually(Effect.sync(() => hooks.ids.length), (n) => n >= 2, { what: "the batch's rest", within: "10 seconds" })
      yield* Effect.sleep(Duration.millis(300))
      assert.deepStrictEqual(hooks.ids, events.slice(2))
    }))
})
