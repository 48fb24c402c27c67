/**
 * Webhook subscriptions and delivery over real HTTP (decisions 0076-0078): a local receiver gets
 * the outbox's events signed per Standard Webhooks, in order, retried on a (shortened) ladder,
 * `Retry-After` honoured, 410 disabling, rotation's two signatures, pause and resume, the log and
 * redelivery, a lease left by a dead runner taken over, the healthcare rule of `outcome.recorded`,
 * opt-in lifecycle events, and the public-host rule at registration.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { createHmac } from "node:crypto"
import { createServer } from "node:http"
import { signCallback } from "../../src/connections/providers/signing.ts"
import { OutboxRepo } from "../../src/kernel/outbox/repo.ts"
import { defaultWebhookSettings, WebhookSettings } from "../../src/webhooks/delivery/service.ts"
import { call, callAs, serveApp, testSettings } from "../support/app.ts"
import { defineConversion, ingest } from "../support/events.ts"
import { eventually } from "../support/eventually.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { sandboxSecretOf } from "../support/providers.ts"
import { worldHandle } from "../support/sandbox-world.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

interface Hook {
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: any
  readonly raw: string
  readonly at: number
}

interface Answer {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: string
}

/** A subscriber's endpoint: records every request and answers what `answer` says for the n-th one (from 0). */
const receiver = Effect.acquireRelease(
  Effect.callback<{ url: string; hooks: Array<Hook>; answer: { next: (n: number) => Answer }; close: () => void }>((resume) => {
    const hooks: Array<Hook> = []
    const answer = { next: (_n: number): Answer => ({ status: 200 }) }
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8")
        const headers: Record<string, string | undefined> = {}
        for (const [name, value] of Object.entries(request.headers)) headers[name] = Array.isArray(value) ? value.join(",") : value
        const reply = answer.next(hooks.length)
        hooks.push({ headers, body: JSON.parse(raw), raw, at: Date.now() })
        response.writeHead(reply.status, reply.headers ?? {}).end(reply.body ?? "")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}/hooks`, hooks, answer, close: () => server.close() }))
    })
  }),
  (server) => Effect.sync(() => server.close())
)

const send = callAs

/** A receiver that answers each event when `script` calls `answer` (the event's id, and how often it came). */
const scriptedReceiver = (script: (id: string, n: number, answer: () => void) => void) =>
  Effect.acquireRelease(
    Effect.callback<{ url: string; close: () => void }>((resume) => {
      const seen = new Map<string, number>()
      const http = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const id: string = JSON.parse(Buffer.concat(chunks).toString("utf8")).id
          const n = (seen.get(id) ?? 0) + 1
          seen.set(id, n)
          script(id, n, () => response.writeHead(200).end())
        })
      })
      http.listen(0, "127.0.0.1", () => {
        const address = http.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}/hooks`, close: () => { http.closeAllConnections(); http.close() } }))
      })
    }),
    (server) => Effect.sync(() => server.close())
  )

/**
 * One producer batch of `count` to a receiver answering each request after `answerMs`; at the first
 * request `lockRows` (given the batch's ids) runs in a transaction held `holdMs`, so a lease
 * renewal that needs those rows waits, as on a stalled process. Answers when the batch succeeded:
 * the requests as received, and when the lock was held.
 */
const batchPastALock = (count: number, answerMs: number, holdMs: number, lockRows: (ids: ReadonlyArray<string>) => Effect.Effect<unknown, unknown, SqlClient>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const context = yield* Effect.context<SqlClient>()
    const world = yield* fixture()
    const received: Array<{ readonly id: string; readonly at: number }> = []
    const lock = { at: 0, released: 0 }
    let ids: ReadonlyArray<string> = []
    const server = yield* scriptedReceiver((id, _n, answer) => {
      received.push({ id, at: performance.now() })
      if (received.length === 1) {
        void Effect.runPromiseWith(context)(sql.withTransaction(Effect.gen(function*() {
          yield* lockRows(ids)
          lock.at = performance.now()
          yield* Effect.sleep(Duration.millis(holdMs))
          lock.released = performance.now()
        })))
      }
      setTimeout(answer, answerMs)
    })
    const sub = yield* subscribe(world.key, { url: server.url })
    ids = yield* outcomeRows(world, count)
    yield* eventually(
      deliveries(world.key, `?subscription_id=${sub.id}&limit=100`),
      (rows) => rows.length === count && rows.every((row) => row.status === "succeeded"),
      { what: "the batch delivered", within: "40 seconds" }
    )
    assert.isAbove(lock.released, 0, "the lock was taken and released")
    return { ids, received, lock }
  })

/**
 * Every event in the batch's order at its first receipt, and a repeat only of a request received by
 * `trusted` (sent while its lease was known to hold, its result not yet written).
 */
const repeatsOnlyBefore = (received: ReadonlyArray<{ readonly id: string; readonly at: number }>, ids: ReadonlyArray<string>, trusted: number) => {
  const firsts = [...new Set(received.map((r) => r.id))]
  assert.deepStrictEqual(firsts, [...ids], "every event, in the batch's order")
  const early = new Set(received.filter((r) => r.at <= trusted).map((r) => r.id))
  const repeats = received.map((r) => r.id).filter((id, k, all) => all.indexOf(id) !== k)
  assert.deepStrictEqual(repeats.filter((id) => !early.has(id)), [], "repeats only of requests sent before the lease could run out")
}

const signature = (secret: string, hook: Hook) =>
  `v1,${createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64"))
    .update(`${hook.headers["webhook-id"]}.${hook.headers["webhook-timestamp"]}.${hook.raw}`).digest("base64")}`

const fixture = Effect.fn("test.webhooksFixture")(function*() {
  const profile = yield* seedProfile()
  const { id: keyId, key } = yield* seedApiKey(profile, { scopes: ["connections:read", "connections:write"], rateLimitPerMinute: 10_000 })
  return { ...profile, key, keyId }
})

const subscribe = (key: string, body: Record<string, unknown>) =>
  Effect.map(send(key, "POST", "/api/v1/webhooks/subscriptions", body), (answer) => {
    assert.strictEqual(answer.status, 201, answer.text)
    // Every success body is `{data}` (api-concepts.md, Conventions).
    assert.deepStrictEqual(Object.keys(answer.json), ["data"])
    return answer.json.data as { id: string; secret: string; status: string; event_types: ReadonlyArray<string> }
  })

/** Outbox rows as the producers write them, one statement (so one fan-out batch), oldest first. */
const outcomeRows = Effect.fn("test.outcomeRows")(function*(
  profile: SeededProfile,
  count: number,
  delivery: Record<string, unknown> = {},
  /** Leased to a window of first attempts whose lease ran out (a process that died: decision 0157). */
  leftByDeadWindow = false
) {
  const sql = yield* SqlClient
  const ids = Array.from({ length: count }, () => crypto.randomUUID())
  const payloads = ids.map((id, index) => ({
    id,
    type: "outcome.recorded",
    created_at: new Date().toISOString(),
    data: {
      provider: "crm",
      outcome_type: "purchase",
      occurred_at: "2026-11-01T10:00:00Z",
      customer_key: `c-${index}`,
      value: `${index + 1}.00`,
      currency: "EUR",
      outcome_event_id: crypto.randomUUID(),
      conversion_id: null
    },
    delivery: { profile_id: profile.profileId, provisioned_by_app_id: null, healthcare_family: false, customer_id: null, ...delivery }
  }))
  yield* sql`
    INSERT INTO outbox (id, profile_id, topic, payload, created_at, fan_out_token, fan_out_until)
    SELECT id, ${profile.profileId}, 'outcome.recorded', payload, now() + make_interval(secs => n / 1000.0),
           ${leftByDeadWindow ? crypto.randomUUID() : null}::uuid, CASE WHEN ${leftByDeadWindow} THEN now() - interval '1 second' END
    FROM unnest(${ids}::uuid[], ${payloads.map((p) => JSON.stringify(p))}::jsonb[]) WITH ORDINALITY AS t(id, payload, n)`
  return ids
})

const topicRow = Effect.fn("test.topicRow")(function*(profile: SeededProfile, topic: string, data: Record<string, unknown>) {
  const sql = yield* SqlClient
  const id = crypto.randomUUID()
  const payload = { id, type: topic, created_at: new Date().toISOString(), data, delivery: { profile_id: profile.profileId } }
  yield* sql`INSERT INTO outbox (id, profile_id, topic, payload) VALUES (${id}, ${profile.profileId}, ${topic}, ${JSON.stringify(payload)}::jsonb)`
  return id
})

const deliveries = (key: string, query = "") =>
  Effect.map(send(key, "GET", `/api/v1/webhooks/deliveries${query}`), (answer) => {
    assert.strictEqual(answer.status, 200, answer.text)
    return answer.json.data as ReadonlyArray<any>
  })

/** A delivery's attempt log (decision 0112): every page, oldest first. */
const attemptLog = (key: string, deliveryId: string) =>
  Effect.map(send(key, "GET", `/api/v1/webhooks/deliveries/${deliveryId}/attempts?limit=100`), (answer) => {
    assert.strictEqual(answer.status, 200, answer.text)
    assert.strictEqual(answer.json.pagination.has_next, false)
    return answer.json.data as ReadonlyArray<any>
  })

/** Waits until every one of the outbox rows is published (a window publishes its rows when it ends). */
const allPublished = Effect.fn("test.allPublished")(function*(ids: ReadonlyArray<string>) {
  const sql = yield* SqlClient
  yield* eventually(
    sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox WHERE id = ANY(${ids}::uuid[]) AND published_at IS NOT NULL`,
    (rows) => rows[0]?.n === ids.length,
    { what: `the ${ids.length} outbox rows published`, within: "5 seconds" }
  )
})

const waitHooks = (hooks: Array<Hook>, count: number, what: string, within: Duration.Input = "10 seconds") =>
  eventually(Effect.sync(() => hooks.length), (n) => n >= count, { what, within })

/** A ladder of seconds instead of hours: the shape is what is tested. */
const background = Layer.succeed(WebhookSettings)({
  ...defaultWebhookSettings,
  pollInterval: Duration.millis(100),
  lease: Duration.seconds(3),
  ladder: [Duration.zero, Duration.millis(400), Duration.millis(800), Duration.millis(1200)],
  timeout: Duration.seconds(2)
})

layer(serveApp(testSettings({ webhookAllowHosts: ["127.0.0.1"] })).pipe(Layer.provide(background)), {
  timeout: "120 seconds",
  excludeTestServices: true
})("webhooks", (it) => {
  it.effect("a window that cannot renew its lease starts no attempt once the lease may have run out; its batch goes on afterwards, in order", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      // 20 requests answered after 200 ms; at the first, the batch's outbox rows locked for 4 s: the
      // window's renewals wait and its lease (1.5 s here, half the delivery lease) runs out meanwhile.
      const { ids, lock, received } = yield* batchPastALock(20, 200, 4_000, (ids) => sql`SELECT id FROM outbox WHERE id = ANY(${ids}::uuid[]) FOR UPDATE`)
      // Three quarters of the 1.5 s lease after the last renewal that got through (at the latest when
      // the lock was taken), and a request's way to the receiver: none may start after that while the lock holds.
      const trusted = lock.at + 1_125 + 300
      const during = received.filter((r) => r.at > trusted && r.at < lock.released)
      assert.deepStrictEqual(during.map((r) => r.id), [], "requests sent while the window could not know it held its rows")
      // On PGlite the window's writes wait for the one connection the lock holds, and the rows, taken
      // again when the lock goes, are sent again from the first one unwritten.
      repeatsOnlyBefore(received, ids, trusted)
    }))

  it.effect("a batch whose first attempt fails goes on after its retry, while another subscription keeps the window open", () =>
    Effect.gen(function*() {
      const world = yield* fixture()
      // A: its first request fails, the retry (400 ms on this ladder) succeeds. B: slow, so the window
      // stays open about three seconds, long after A's retry. Were the rest of A's batch written only
      // when the window ends, its retry would find no next row to hand on to, and it would never go.
      const failing = yield* receiver
      failing.answer.next = (n) => n === 0 ? { status: 500 } : { status: 200 }
      const slow = yield* scriptedReceiver((_id, _n, answer) => setTimeout(answer, 1000))
      const a = yield* subscribe(world.key, { url: failing.url })
      yield* subscribe(world.key, { url: slow.url })
      const batch: ReadonlyArray<string> = yield* outcomeRows(world, 3)
      const rows = yield* eventually(
        deliveries(world.key, `?subscription_id=${a.id}`),
        (rows) => rows.length === 3 && rows.every((row) => row.status === "succeeded"),
        { what: "A's batch delivered after its retry", within: "10 seconds" }
      )
      assert.deepStrictEqual(failing.hooks.map((hook) => hook.body.id), [batch[0], ...batch])
      assert.deepStrictEqual(rows.find((row) => row.event_id === batch[0])?.attempts, 2)
    }))

  describe("subscriptions", () => {
    it.effect("create answers the whsec_ secret once with the default event types; list, patch and delete; scopes enforced", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        const hooks = yield* receiver
        const created = yield* subscribe(world.key, { url: hooks.url, description: "orders" })
        assert.match(created.secret, /^whsec_[A-Za-z0-9+/]+=*$/)
        assert.strictEqual(created.status, "active")
        assert.deepStrictEqual(created.event_types, ["outcome.recorded", "order.status.changed", "message.received"])
        const listed = yield* send(world.key, "GET", "/api/v1/webhooks/subscriptions")
        assert.strictEqual(listed.status, 200, listed.text)
        assert.deepStrictEqual(listed.json.data.map((s: any) => s.id), [created.id])
        assert.notProperty(listed.json.data[0], "secret")
        assert.notInclude(listed.text, created.secret)
        const patched = yield* send(world.key, "PATCH", `/api/v1/webhooks/subscriptions/${created.id}`, {
          event_types: ["connection.connected", "outcome.recorded", "connection.connected"],
          status: "paused"
        })
        assert.strictEqual(patched.status, 200, patched.text)
        assert.deepStrictEqual(Object.keys(patched.json), ["data"])
        assert.deepStrictEqual(patched.json.data.event_types, ["outcome.recorded", "connection.connected"])
        assert.strictEqual(patched.json.data.status, "paused")
        const unknownType = yield* send(world.key, "POST", "/api/v1/webhooks/subscriptions", { url: hooks.url, event_types: ["nope"] })
        assert.strictEqual(unknownType.status, 400, unknownType.text)
        assert.strictEqual(unknownType.json.error.code, "validation_error")
        // Another profile's key sees a 404, byte-identical to a missing one.
        const other = yield* fixture()
        const foreign = yield* send(other.key, "PATCH", `/api/v1/webhooks/subscriptions/${created.id}`, { status: "active" })
        const missing = yield* send(other.key, "PATCH", `/api/v1/webhooks/subscriptions/${crypto.randomUUID()}`, { status: "active" })
        assert.strictEqual(foreign.status, 404)
        assert.strictEqual(foreign.json.error.message, missing.json.error.message)
        const { key: readOnly } = yield* seedApiKey(world, { scopes: ["connections:read"] })
        const refused = yield* send(readOnly, "POST", "/api/v1/webhooks/subscriptions", { url: hooks.url })
        assert.strictEqual(refused.status, 403, refused.text)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        const removed = yield* send(world.key, "DELETE", `/api/v1/webhooks/subscriptions/${created.id}`)
        assert.deepStrictEqual(removed.json, { data: { id: created.id, deleted: true } })
        assert.strictEqual((yield* send(world.key, "DELETE", `/api/v1/webhooks/subscriptions/${created.id}`)).status, 404)
        assert.deepStrictEqual((yield* send(world.key, "GET", "/api/v1/webhooks/subscriptions")).json.data, [])
      }))

    it.effect("the public-host rule at registration: private, loopback, metadata and plain-http public targets are 400, nothing stored", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        for (const [url, reason] of [
          ["https://10.0.0.8/hook", "host_not_public"],
          ["https://169.254.169.254/latest", "host_not_public"],
          ["https://[::ffff:192.168.1.1]/", "host_not_public"],
          ["https://100.64.0.1/", "host_not_public"],
          ["https://[fd00::1]/", "host_not_public"],
          ["http://127.0.0.2:8080/hook", "host_not_public"],
          ["http://93.184.216.34/hook", "url_scheme"],
          ["javascript:alert(1)", "url_invalid"]
        ] as const) {
          const answer = yield* send(world.key, "POST", "/api/v1/webhooks/subscriptions", { url })
          assert.strictEqual(answer.status, 400, `${url}: ${answer.text}`)
          assert.strictEqual(answer.json.error.code, "validation_error")
          assert.strictEqual(answer.json.error.reason, reason, url)
        }
        assert.deepStrictEqual((yield* send(world.key, "GET", "/api/v1/webhooks/subscriptions")).json.data, [])
      }))

    it.effect("the 6to4 relay anycast 192.88.99.0/24 is not public: as IPv4, IPv4-mapped and inside 6to4, 400 host_not_public, nothing stored", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* fixture()
        for (const url of ["https://192.88.99.1/hook", "https://[::ffff:192.88.99.1]/hook", "https://[2002:c058:6301::1]/hook"]) {
          const answer = yield* send(world.key, "POST", "/api/v1/webhooks/subscriptions", { url })
          assert.strictEqual(answer.status, 400, `${url}: ${answer.text}`)
          assert.strictEqual(answer.json.error.code, "validation_error")
          assert.strictEqual(answer.json.error.reason, "host_not_public", url)
        }
        const [row] = yield* sql<{ count: number }>`
          SELECT count(*)::int AS count FROM webhook_subscriptions WHERE profile_id = ${world.profileId}`
        assert.strictEqual(row?.count, 0)
      }))
  })

  describe("delivery", () => {
    it.effect("the workspace's archival pauses its subscriptions (status_reason workspace_archived)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const app = yield* registerApp()
        const created = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `ref-${crypto.randomUUID()}`, email: "o@shop.example" })).json.data
        const profile = { profileId: created.profile_id, workspaceId: created.workspace_id }
        const { key } = yield* seedApiKey(profile, { scopes: ["connections:read", "connections:write"] })
        const hooks = yield* receiver
        const sub = yield* subscribe(key, { url: hooks.url })
        const archived = yield* asApp(app, `/api/v1/profiles/${created.profile_id}`, "DELETE")
        assert.strictEqual(archived.status, 200, archived.text)
        const [row] = yield* sql<{ status: string; status_reason: string | null }>`
          SELECT status, status_reason FROM webhook_subscriptions WHERE id = ${sub.id}`
        assert.deepStrictEqual({ ...row }, { status: "paused", status_reason: "workspace_archived" })
      }))

    it.effect("signed per Standard Webhooks, in outbox order, once each; the outbox rows are published and logged", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        const hooks = yield* receiver
        const sub = yield* subscribe(world.key, { url: hooks.url })
        const ids = yield* outcomeRows(world, 5)
        yield* waitHooks(hooks.hooks, 5, "five deliveries")
        assert.deepStrictEqual(hooks.hooks.map((h) => h.body.id), ids)
        for (const hook of hooks.hooks) {
          assert.strictEqual(hook.headers["webhook-signature"], signature(sub.secret, hook))
          assert.strictEqual(hook.headers["webhook-id"], hook.body.id)
          assert.approximately(Number(hook.headers["webhook-timestamp"]), Date.now() / 1000, 30)
          assert.strictEqual(hook.headers["content-type"], "application/json")
        }
        const first = hooks.hooks[0]!.body
        assert.deepStrictEqual(Object.keys(first).sort(), ["created_at", "data", "id", "provider", "type"])
        assert.include(first, { type: "outcome.recorded", provider: "svc" })
        assert.include(first.data, { provider: "crm", customer_key: "c-0", value: "1.00", conversion_id: null })
        // Without customers:read behind the subscription there is no contact.
        assert.notProperty(first.data, "contact")
        // Published once the fan-out that sent them ends: its first attempts go out before (decision 0157).
        yield* allPublished(ids)
        const log = yield* eventually(deliveries(world.key, `?subscription_id=${sub.id}`), (rows) => rows.every((r) => r.status === "succeeded"), {
          what: "the log to show five successes",
          within: "5 seconds"
        })
        assert.strictEqual(log.length, 5)
        assert.deepStrictEqual(log.map((r) => r.event_id), [...ids].reverse())
        assert.include(log[0], { attempts: 1, last_status_code: 200, next_attempt_at: null, redelivery_of: null })
        // Never twice.
        yield* Effect.sleep(Duration.millis(500))
        assert.strictEqual(hooks.hooks.length, 5)
      }))

    it.effect("an event no live subscription takes is written published (never fanned out); one a subscription lists waits for the fan-out (decision 0156)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const outbox = yield* OutboxRepo
        const world = yield* fixture()
        const hooks = yield* receiver
        // Written through the producers' repository, and read back before the transaction ends:
        // the fan-out cannot see the row yet, so what it holds is what the insert wrote.
        const written = (topic: string) =>
          sql.withTransaction(Effect.gen(function*() {
            const id = crypto.randomUUID()
            yield* outbox.insert([{ id, profileId: world.profileId, topic, payload: { id, type: topic, data: {}, delivery: { profile_id: world.profileId } } }])
            const [row] = yield* sql<{ published: boolean }>`SELECT published_at IS NOT NULL AS published FROM outbox WHERE id = ${id}`
            return row?.published
          }))
        assert.strictEqual(yield* written("outcome.recorded"), true, "no subscription at all")
        const sub = yield* subscribe(world.key, { url: hooks.url })
        assert.strictEqual(yield* written("outcome.recorded"), false, "a subscription lists it")
        assert.strictEqual(yield* written("experiment.completed"), true, "an opt-in type the subscription does not list")
        assert.strictEqual((yield* send(world.key, "PATCH", `/api/v1/webhooks/subscriptions/${sub.id}`, { status: "paused" })).status, 200)
        assert.strictEqual(yield* written("outcome.recorded"), false, "a paused subscription keeps its backlog")
        yield* sql`UPDATE webhook_subscriptions SET status = 'disabled' WHERE id = ${sub.id}`
        assert.strictEqual(yield* written("outcome.recorded"), true, "a disabled subscription")
        yield* sql`UPDATE webhook_subscriptions SET status = 'active' WHERE id = ${sub.id}`
        assert.strictEqual((yield* send(world.key, "DELETE", `/api/v1/webhooks/subscriptions/${sub.id}`)).status, 200)
        assert.strictEqual(yield* written("outcome.recorded"), true, "a deleted subscription")
        // Another profile's subscription takes nothing of this one's.
        const other = yield* fixture()
        yield* subscribe(other.key, { url: hooks.url })
        assert.strictEqual(yield* written("outcome.recorded"), true, "another profile's subscription")
      }).pipe(Effect.provide(OutboxRepo.layer)))

    it.effect("a producer batch written through the outbox goes out in the order it was written, whatever its ids (issue 34)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const outbox = yield* OutboxRepo
        const world = yield* fixture()
        const hooks = yield* receiver
        yield* subscribe(world.key, { url: hooks.url })
        // One transaction, one statement: one producer batch; random ids, so their order is not the written one.
        const rows = Array.from({ length: 30 }, (_, index) => {
          const id = crypto.randomUUID()
          return {
            id,
            profileId: world.profileId,
            topic: "outcome.recorded",
            payload: {
              id,
              type: "outcome.recorded",
              created_at: new Date().toISOString(),
              data: {
                provider: "crm", outcome_type: "purchase", occurred_at: "2026-11-01T10:00:00Z", customer_key: `o-${index}`,
                value: "1.00", currency: "EUR", outcome_event_id: crypto.randomUUID(), conversion_id: null
              },
              delivery: { profile_id: world.profileId, provisioned_by_app_id: null, healthcare_family: false, customer_id: null }
            }
          }
        })
        yield* sql.withTransaction(outbox.insert(rows))
        yield* waitHooks(hooks.hooks, rows.length, "thirty deliveries")
        assert.deepStrictEqual(hooks.hooks.map((hook) => hook.body.id), rows.map((row) => row.id))
      }).pipe(Effect.provide(OutboxRepo.layer)))

    it.effect("an event recorded through POST /api/v1/events reaches the subscriber with its contact when the key holds customers:read", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        const { key: writer } = yield* seedApiKey(world, { scopes: ["events:write", "customers:read", "connections:write"], rateLimitPerMinute: 1000 })
        yield* defineConversion(world.profileId, "sale", ["purchase"], { countsAsCash: true })
        const hooks = yield* receiver
        yield* subscribe(writer, { url: hooks.url })
        // The same event in the same fan-out to a subscription whose key cannot read customers: no contact.
        const plain = yield* receiver
        yield* subscribe(world.key, { url: plain.url })
        const answer = yield* ingest(writer, {
          event_name: "purchase",
          properties: { value: "12.50", currency: "EUR" },
          user_traits: { external_id: "c-77", email: "ana@example.com" }
        })
        assert.strictEqual(answer.status, 200, answer.text)
        yield* waitHooks(hooks.hooks, 1, "the recorded outcome")
        const event = hooks.hooks[0]!.body
        assert.strictEqual(event.type, "outcome.recorded")
        assert.include(event.data, { outcome_event_id: answer.json.data.outcome_event_id, customer_key: "c-77", value: "12.5" })
        assert.include(event.data.contact, { customer_key: "c-77", email: "ana@example.com" })
        yield* waitHooks(plain.hooks, 1, "the recorded outcome, without its contact")
        assert.strictEqual(plain.hooks[0]!.body.id, event.id)
        assert.notProperty(plain.hooks[0]!.body.data, "contact")
        const { contact: _contact, ...rest } = event.data
        assert.deepStrictEqual(plain.hooks[0]!.body.data, rest, "the same event otherwise")
      }))

    it.effect("a delivery row carries the trace context its outbox row holds (the context its attempt span links to)", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        const { key: writer } = yield* seedApiKey(world, { scopes: ["events:write", "connections:write"], rateLimitPerMinute: 1000 })
        yield* defineConversion(world.profileId, "sale", ["purchase"], { countsAsCash: true })
        const hooks = yield* receiver
        const sub = yield* subscribe(writer, { url: hooks.url })
        const answer = yield* call("/api/v1/events", {
          method: "POST",
          headers: {
            authorization: `Bearer ${writer}`,
            "content-type": "application/json",
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            tracestate: "vendor=abc"
          },
          body: JSON.stringify({ event_name: "purchase", properties: { value: "3.00", currency: "EUR" } })
        })
        assert.strictEqual(answer.status, 200, answer.text)
        yield* waitHooks(hooks.hooks, 1, "the traced outcome")
        const sql = yield* SqlClient
        // The outbox row holds the context of the request's write; the delivery row carries it on.
        const rows = yield* sql<{ traceparent: string | null; tracestate: string | null; queued_by: string | null; queued_state: string | null }>`
          SELECT d.traceparent, d.tracestate, o.traceparent AS queued_by, o.tracestate AS queued_state
          FROM webhook_deliveries d JOIN outbox o ON o.id = d.outbox_id WHERE d.subscription_id = ${sub.id}`
        assert.strictEqual(rows.length, 1)
        assert.match(rows[0]?.traceparent ?? "", /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/)
        assert.strictEqual(rows[0]?.traceparent, rows[0]?.queued_by)
        assert.strictEqual(rows[0]?.tracestate, rows[0]?.queued_state)
      }))

    it.effect("a 500 is retried on the ladder, Retry-After pushes the next attempt later, order holds behind a failing event", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        const hooks = yield* receiver
        hooks.answer.next = (n) => n === 0 ? { status: 500 } : n === 1 ? { status: 503, headers: { "retry-after": "2" } } : { status: 200 }
        const sub = yield* subscribe(world.key, { url: hooks.url })
        const ids = yield* outcomeRows(world, 2)
        yield* waitHooks(hooks.hooks, 4, "two failures, then both events")
        assert.deepStrictEqual(hooks.hooks.map((h) => h.body.id), [ids[0], ids[0], ids[0], ids[1]])
        // Retry-After: 2 beat the ladder's next step (about 0.4 s after the first retry).
        const gap = hooks.hooks[2]!.at - hooks.hooks[1]!.at
        assert.isAtLeast(gap, 1900, `gap ${gap} ms`)
        const log = yield* eventually(deliveries(world.key, `?subscription_id=${sub.id}&status=succeeded`), (rows) => rows.length === 2, {
          what: "both succeeded",
          within: "5 seconds"
        })
        assert.strictEqual(log.find((r) => r.event_id === ids[0])?.attempts, 3)
      }))

    it.effect("the attempt log keeps every attempt (500 then 200) in order with code, duration, time and the answer's start; a redelivery appends to it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* fixture()
        const hooks = yield* receiver
        // The 500 says why at length (6,000 bytes of two-byte characters): its first 1,000 characters are kept; the 200 says nothing.
        hooks.answer.next = (n) => n === 0 ? { status: 500, body: "é".repeat(3000) } : { status: 200 }
        const sub = yield* subscribe(world.key, { url: hooks.url })
        const [eventId] = yield* outcomeRows(world, 1)
        const [delivery] = yield* eventually(deliveries(world.key, `?subscription_id=${sub.id}`), (rows) => rows[0]?.status === "succeeded", {
          what: "the delivery after one 500",
          within: "10 seconds"
        })
        // The row keeps only the last answer; the log keeps both.
        assert.include(delivery, { event_id: eventId, attempts: 2, last_status_code: 200, last_error: null })
        const log = yield* attemptLog(world.key, delivery.id)
        assert.deepStrictEqual(log.map((a) => [a.delivery_id, a.attempt, a.status_code, a.error, a.response_body]), [
          [delivery.id, 1, 500, null, "é".repeat(1000)],
          [delivery.id, 2, 200, null, null]
        ])
        for (const entry of log) {
          assert.isTrue(Number.isInteger(entry.duration_ms) && entry.duration_ms >= 0 && entry.duration_ms < 2_000, JSON.stringify(entry))
          assert.match(entry.attempted_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
        }
        // The 500 was retried on the ladder (about 0.4 s later): the second attempt started after the first.
        assert.isAbove(Date.parse(log[1].attempted_at), Date.parse(log[0].attempted_at))
        assert.isAtMost(Date.parse(log[1].attempted_at), Date.parse(delivery.last_attempt_at))

        const again = yield* send(world.key, "POST", `/api/v1/webhooks/deliveries/${delivery.id}/redeliver`)
        assert.strictEqual(again.status, 202, again.text)
        yield* eventually(deliveries(world.key, `?subscription_id=${sub.id}&status=succeeded`), (rows) => rows.length === 2, {
          what: "the redelivery",
          within: "5 seconds"
        })
        const appended = yield* attemptLog(world.key, delivery.id)
        assert.deepStrictEqual(appended.map((a) => [a.delivery_id, a.attempt, a.status_code]), [
          [delivery.id, 1, 500],
          [delivery.id, 2, 200],
          [again.json.data.id, 1, 200]
        ])
        // The redelivery shows the same log: it is the event's to the subscription.
        assert.deepStrictEqual(yield* attemptLog(world.key, again.json.data.id), appended)

        // Pages of one, in order; a cursor this list did not answer is 400; another profile's delivery is 404.
        const first = yield* send(world.key, "GET", `/api/v1/webhooks/deliveries/${delivery.id}/attempts?limit=1`)
        assert.strictEqual(first.status, 200, first.text)
        assert.deepStrictEqual(first.json.data, [appended[0]])
        assert.strictEqual(first.json.pagination.has_next, true)
        const second = yield* send(world.key, "GET", `/api/v1/webhooks/deliveries/${delivery.id}/attempts?limit=1&cursor=${first.json.pagination.cursor}`)
        assert.deepStrictEqual(second.json.data, [appended[1]])
        const badCursor = yield* send(world.key, "GET", `/api/v1/webhooks/deliveries/${delivery.id}/attempts?cursor=%%%`)
        assert.strictEqual(badCursor.status, 400, badCursor.text)
        assert.strictEqual(badCursor.json.error.code, "invalid_parameter")
        const other = yield* fixture()
        const foreign = yield* send(other.key, "GET", `/api/v1/webhooks/deliveries/${delivery.id}/attempts`)
        assert.strictEqual(foreign.status, 404, foreign.text)
        assert.strictEqual(foreign.json.error.code, "not_found")
        assert.strictEqual((yield* send(world.key, "GET", "/api/v1/webhooks/deliveries/not-a-uuid/attempts")).status, 404)
        const noScope = yield* seedApiKey(world, { scopes: ["exports:read"] })
        assert.strictEqual((yield* send(noScope.key, "GET", `/api/v1/webhooks/deliveries/${delivery.id}/attempts`)).status, 403)

        // One log row per recorded attempt, never more than the rows' counts.
        const [counted] = yield* sql<{ logged: number; attempts: number }>`
          SELECT (SELECT count(*)::int FROM webhook_delivery_attempts WHERE subscription_id = ${sub.id}) AS logged,
                 (SELECT sum(attempts)::int FROM webhook_deliveries WHERE subscription_id = ${sub.id}) AS attempts`
        assert.deepStrictEqual(counted, { logged: 3, attempts: 3 })
      }))

    it.effect("the ladder spent: the delivery fails after its last step; 410 fails it at once and disables the subscription", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        const failing = yield* receiver
        failing.answer.next = () => ({ status: 500 })
        const spent = yield* subscribe(world.key, { url: failing.url })
        const gone = yield* receiver
        gone.answer.next = () => ({ status: 410 })
        const disabled = yield* subscribe(world.key, { url: gone.url })
        yield* outcomeRows(world, 1)
        const failed = yield* eventually(deliveries(world.key, `?subscription_id=${spent.id}`), (rows) => rows[0]?.status === "failed", {
          what: "the ladder to be spent",
          within: "10 seconds"
        })
        assert.include(failed[0], { attempts: 4, last_status_code: 500 })
        assert.strictEqual(failing.hooks.length, 4)
        assert.deepStrictEqual((yield* attemptLog(world.key, failed[0].id)).map((a) => [a.attempt, a.status_code]), [[1, 500], [2, 500], [3, 500], [4, 500]])
        const goneLog = yield* deliveries(world.key, `?subscription_id=${disabled.id}`)
        assert.include(goneLog[0], { status: "failed", attempts: 1, last_status_code: 410, last_error: "endpoint_gone" })
        assert.deepStrictEqual((yield* attemptLog(world.key, goneLog[0].id)).map((a) => [a.attempt, a.status_code, a.error]), [[1, 410, "endpoint_gone"]])
        const listed = (yield* send(world.key, "GET", "/api/v1/webhooks/subscriptions")).json.data.find((s: any) => s.id === disabled.id)
        assert.include(listed, { status: "disabled", status_reason: "endpoint_gone" })
        // A disabled subscription is not sent (nor queued) anything until it is turned on again.
        yield* outcomeRows(world, 1)
        yield* Effect.sleep(Duration.millis(600))
        assert.strictEqual(gone.hooks.length, 1)
        gone.answer.next = () => ({ status: 200 })
        const resumed = yield* send(world.key, "PATCH", `/api/v1/webhooks/subscriptions/${disabled.id}`, { status: "active" })
        assert.include(resumed.json.data, { status: "active", status_reason: null })
        const [after] = yield* outcomeRows(world, 1)
        yield* waitHooks(gone.hooks, 2, "an event after re-enabling")
        assert.strictEqual(gone.hooks[1]!.body.id, after)
      }))

    it.effect("410 on a batch's first row: nothing more goes to the endpoint, the rest of the batch fails as disabled", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        const gone = yield* receiver
        gone.answer.next = () => ({ status: 410 })
        const sub = yield* subscribe(world.key, { url: gone.url })
        const batch: ReadonlyArray<string> = yield* outcomeRows(world, 3)
        const rows = yield* eventually(
          deliveries(world.key, `?subscription_id=${sub.id}`),
          (rows) => rows.length === 3 && rows.every((row) => row.status === "failed"),
          { what: "the batch failed", within: "10 seconds" }
        )
        assert.deepStrictEqual(gone.hooks.map((hook) => hook.body.id), [batch[0]])
        const errors = batch.map((id) => rows.find((row) => row.event_id === id)?.last_error)
        assert.deepStrictEqual(errors, ["endpoint_gone", "subscription_disabled", "subscription_disabled"])
      }))

    it.effect("rotation: both secrets sign for the grace period, each verifiable; the new secret is shown once", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        const hooks = yield* receiver
        const sub = yield* subscribe(world.key, { url: hooks.url })
        const rotated = yield* send(world.key, "POST", `/api/v1/webhooks/subscriptions/${sub.id}/rotate-secret`)
        assert.strictEqual(rotated.status, 200, rotated.text)
        assert.deepStrictEqual(Object.keys(rotated.json), ["data"])
        assert.notStrictEqual(rotated.json.data.secret, sub.secret)
        assert.approximately(Date.parse(rotated.json.data.previous_secret_expires_at) - Date.now(), 24 * 3600 * 1000, 60_000)
        yield* outcomeRows(world, 1)
        yield* waitHooks(hooks.hooks, 1, "a delivery after rotation")
        const hook = hooks.hooks[0]!
        assert.deepStrictEqual(hook.headers["webhook-signature"]!.split(" "), [signature(rotated.json.data.secret, hook), signature(sub.secret, hook)])
      }))

    it.effect("pause holds deliveries, resume sends them in order; redelivery repeats an event with the same webhook-id", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        const hooks = yield* receiver
        const sub = yield* subscribe(world.key, { url: hooks.url })
        const paused = yield* send(world.key, "PATCH", `/api/v1/webhooks/subscriptions/${sub.id}`, { status: "paused" })
        assert.strictEqual(paused.json.data.status, "paused")
        const ids = yield* outcomeRows(world, 3)
        yield* eventually(deliveries(world.key, `?subscription_id=${sub.id}`), (rows) => rows.length === 3, { what: "three queued deliveries", within: "5 seconds" })
        yield* Effect.sleep(Duration.millis(500))
        assert.strictEqual(hooks.hooks.length, 0)
        yield* send(world.key, "PATCH", `/api/v1/webhooks/subscriptions/${sub.id}`, { status: "active" })
        yield* waitHooks(hooks.hooks, 3, "the held deliveries")
        assert.deepStrictEqual(hooks.hooks.map((h) => h.body.id), ids)
        const log = yield* eventually(deliveries(world.key, `?subscription_id=${sub.id}&status=succeeded`), (rows) => rows.length === 3, {
          what: "three successes",
          within: "5 seconds"
        })
        const again = yield* send(world.key, "POST", `/api/v1/webhooks/deliveries/${log[0].id}/redeliver`)
        assert.strictEqual(again.status, 202, again.text)
        assert.deepStrictEqual(Object.keys(again.json), ["data"])
        assert.include(again.json.data, { status: "pending", redelivery_of: log[0].id, event_id: log[0].event_id })
        yield* waitHooks(hooks.hooks, 4, "the redelivery")
        assert.strictEqual(hooks.hooks[3]!.headers["webhook-id"], log[0].event_id)
        assert.strictEqual(hooks.hooks[3]!.raw, hooks.hooks.find((h) => h.body.id === log[0].event_id)!.raw)
        const other = yield* fixture()
        assert.strictEqual((yield* send(other.key, "POST", `/api/v1/webhooks/deliveries/${log[0].id}/redeliver`)).status, 404)
        assert.strictEqual((yield* send(world.key, "GET", "/api/v1/webhooks/deliveries?cursor=%%%")).status, 400)
      }))

    it.effect("experiment.completed (opt-in): a completion's event reaches the subscription that names it, signed, once; the default set gets none", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        const { key: experimenter } = yield* seedApiKey(world, { scopes: ["analytics:read", "campaigns:apply"], rateLimitPerMinute: 10_000 })
        const named = yield* receiver
        const defaults = yield* receiver
        const sub = yield* subscribe(world.key, { url: named.url, event_types: ["experiment.completed"] })
        const plain = yield* subscribe(world.key, { url: defaults.url })
        assert.deepStrictEqual(plain.event_types, ["outcome.recorded", "order.status.changed", "message.received"])
        const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)
        const created = yield* send(experimenter, "POST", "/api/v1/experiments", {
          name: "Holdout",
          kind: "audience_holdout",
          metric: { conversion_key: "purchase", measure: "count" },
          window: { start: day(-10), end: day(-2) },
          holdout_fraction: 0.1
        })
        assert.strictEqual(created.status, 201, created.text)
        const id: string = created.json.data.id
        assert.strictEqual((yield* send(experimenter, "POST", `/api/v1/experiments/${id}/start`)).status, 200)
        // The read completes it (its window is over): the one event.
        const read = yield* send(experimenter, "GET", `/api/v1/experiments/${id}`)
        assert.strictEqual(read.json.data.status, "completed")
        yield* send(experimenter, "GET", `/api/v1/experiments/${id}/results`)
        yield* waitHooks(named.hooks, 1, "the experiment.completed delivery")
        const hook = named.hooks[0]!
        assert.strictEqual(hook.headers["webhook-signature"], signature(sub.secret, hook))
        assert.strictEqual(hook.headers["webhook-id"], hook.body.id)
        assert.include(hook.body, { type: "experiment.completed", provider: "svc" })
        assert.include(hook.body.data, { id, kind: "audience_holdout", name: "Holdout", status: "completed", status_reason: "window_ended" })
        assert.deepStrictEqual(hook.body.data.results.insufficient_data, { reason: hook.body.data.results.insufficient_data.reason })
        yield* Effect.sleep(Duration.millis(500))
        assert.strictEqual(named.hooks.length, 1)
        assert.strictEqual(defaults.hooks.length, 0)
      }))

    it.effect("a lease left by a runner that died mid-attempt expires and another attempt delivers it, once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* fixture()
        const hooks = yield* receiver
        const sub = yield* subscribe(world.key, { url: hooks.url, event_types: ["connection.connected"] })
        // Paused while the "dead runner" takes the row, so the live worker cannot get there first.
        yield* send(world.key, "PATCH", `/api/v1/webhooks/subscriptions/${sub.id}`, { status: "paused" })
        yield* topicRow(world, "connection.connected", { provider: "crm" })
        const [row] = yield* eventually(
          sql<{ id: string }>`SELECT id FROM webhook_deliveries WHERE subscription_id = ${sub.id}`,
          (rows) => rows.length === 1,
          { what: "the queued delivery", within: "5 seconds" }
        )
        yield* sql`UPDATE webhook_deliveries SET attempts = 1, lease_token = ${crypto.randomUUID()},
                   lease_until = now() + interval '1500 milliseconds' WHERE id = ${row!.id}`
        const resumedAt = Date.now()
        yield* send(world.key, "PATCH", `/api/v1/webhooks/subscriptions/${sub.id}`, { status: "active" })
        yield* waitHooks(hooks.hooks, 1, "the taken-over delivery")
        assert.isAtLeast(hooks.hooks[0]!.at - resumedAt, 1000)
        assert.include(hooks.hooks[0]!.body, { type: "connection.connected", provider: "svc" })
        yield* Effect.sleep(Duration.millis(500))
        assert.strictEqual(hooks.hooks.length, 1)
        const log = yield* deliveries(world.key, `?subscription_id=${sub.id}`)
        assert.include(log[0], { status: "succeeded", attempts: 2 })
        // The dead runner's attempt recorded no result, so it has no log entry; the one that delivered does.
        assert.deepStrictEqual((yield* attemptLog(world.key, log[0].id)).map((a) => [a.attempt, a.status_code]), [[2, 200]])
      }))

    it.effect("message.received from the mailbox push: a bounce carries delivery_failure read from its report, a reply null, thread ids kept", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* fixture()
        const mailbox = `mbx-${crypto.randomUUID()}`
        const connectionId = crypto.randomUUID()
        yield* sql`INSERT INTO connections (id, profile_id, provider, provider_kind, external_account_id)
                   VALUES (${connectionId}, ${world.profileId}, 'email', 'email', ${mailbox})`
        const hooks = yield* receiver
        yield* subscribe(world.key, { url: hooks.url, event_types: ["message.received"] })
        const boundary = "b-1"
        const report = [
          `--${boundary}`, "Content-Type: text/plain", "", "Undeliverable.", "",
          `--${boundary}`, "Content-Type: message/delivery-status", "",
          "Reporting-MTA: dns; mx.example.net", "",
          "Final-Recipient: rfc822; nobody@customer.example", "Action: failed", "Status: 5.1.1",
          "Diagnostic-Code: smtp; 550 5.1.1 User unknown", "",
          `--${boundary}`, "Content-Type: text/rfc822-headers", "", "Message-ID: <sent-1@svc.example>", "",
          `--${boundary}--`, ""
        ].join("\n")
        const push = (eventId: string, message: Record<string, unknown>) => {
          const raw = JSON.stringify({ event: "message.received", event_id: eventId, account_id: mailbox, mailbox_id: mailbox, timestamp: 1764000000, message })
          // Named as the sandbox names its pushes: the world of the profile they are for (decision 0109).
          return call("/hooks/email", {
            method: "POST",
            headers: { "content-type": "application/json", ...signCallback("email", sandboxSecretOf("email"), raw), "x-sandbox-world": worldHandle(world.profileId) },
            body: raw
          })
        }
        const bounce = yield* push(`evt-${crypto.randomUUID()}`, {
          id: "m-2", thread_id: "t-1", message_id_header: "<dsn-2@mx.example.net>", in_reply_to: null, from: "mailer-daemon@mx.example.net",
          to: ["team@svc.example"], subject: "Undelivered", content_type: `multipart/report; report-type=delivery-status; boundary="${boundary}"`, body: report
        })
        assert.strictEqual(bounce.status, 200, bounce.text)
        const replyId = `evt-${crypto.randomUUID()}`
        const reply = yield* push(replyId, {
          id: "m-3", thread_id: "t-1", message_id_header: "<r-3@customer.example>", in_reply_to: "<sent-1@svc.example>", from: "ana@customer.example",
          to: ["team@svc.example"], subject: "Re: quote", content_type: "text/plain", body: "Thanks!"
        })
        assert.strictEqual(reply.status, 200, reply.text)
        // The provider delivering the same push again adds nothing.
        assert.strictEqual((yield* push(replyId, { id: "m-3", thread_id: "t-1" })).status, 200)
        yield* waitHooks(hooks.hooks, 2, "two message.received")
        // Two pushes, two fan-out batches: order is promised within a batch only.
        const failure = hooks.hooks.find((h) => h.body.data.message_id === "m-2")!.body
        const answer = hooks.hooks.find((h) => h.body.data.message_id === "m-3")!.body
        assert.include(failure, { type: "message.received", provider: "email" })
        assert.include(failure.data, { thread_id: "t-1", message_id: "m-2", connection_id: connectionId, text: null })
        assert.deepStrictEqual(failure.data.delivery_failure, {
          failed_recipient: "nobody@customer.example",
          status: "5.1.1",
          original_rfc822_message_id: "<sent-1@svc.example>",
          action: "failed",
          diagnostic_code: "550 5.1.1 User unknown"
        })
        assert.include(answer.data, { thread_id: "t-1", rfc822_message_id: "<r-3@customer.example>", in_reply_to: "<sent-1@svc.example>", text: "Thanks!", delivery_failure: null })
        yield* Effect.sleep(Duration.millis(400))
        assert.strictEqual(hooks.hooks.length, 2)
      }))

    it.effect("order.status.changed carries provider commerce; leadgen.received (opt-in) carries the leadgen_id as its id", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* fixture()
        const hooks = yield* receiver
        yield* subscribe(world.key, { url: hooks.url, event_types: ["order.status.changed", "leadgen.received"] })
        yield* topicRow(world, "order.status.changed", { status: "fulfilled", name: "#1001", email: null })
        const rowId = crypto.randomUUID()
        const leadgenId = `lead-${crypto.randomUUID()}`
        const lead = { id: leadgenId, type: "leadgen.received", created_at: new Date().toISOString(), data: { leadgen_id: leadgenId, form_id: "f-1", profile_id: world.profileId }, delivery: { profile_id: world.profileId } }
        yield* sql`INSERT INTO outbox (id, profile_id, topic, payload) VALUES (${rowId}, ${world.profileId}, 'leadgen.received', ${JSON.stringify(lead)}::jsonb)`
        yield* waitHooks(hooks.hooks, 2, "the order and the lead")
        const order = hooks.hooks.find((h) => h.body.type === "order.status.changed")!.body
        assert.include(order, { provider: "commerce" })
        assert.include(order.data, { status: "fulfilled", name: "#1001" })
        const received = hooks.hooks.find((h) => h.body.type === "leadgen.received")!
        assert.include(received.body, { id: leadgenId, provider: "svc" })
        assert.strictEqual(received.headers["webhook-id"], leadgenId)
        assert.include(received.body.data, { form_id: "f-1", profile_id: world.profileId })
      }))

    it.effect("lifecycle events are opt-in; healthcare outcome.recorded goes only to the provisioning app, contact per its grant", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* fixture()
        const appId = crypto.randomUUID()
        yield* sql`
          INSERT INTO oauth_apps (id, name, client_id, client_secret_hash, jwt_secret_encrypted)
          VALUES (${appId}, 'Clinic partner', ${`client-${appId}`}, 'x', 'x')`
        const { id: appKeyId, key: appKey } = yield* seedApiKey(world, {
          scopes: ["connections:read", "connections:write", "customers:read"],
          rateLimitPerMinute: 1000
        })
        yield* sql`UPDATE api_keys SET oauth_app_id = ${appId} WHERE id = ${appKeyId}`
        yield* sql`INSERT INTO entitlements (profile_id, feature, enabled) VALUES (${world.profileId}, 'svc_attribution', true)`
        yield* sql`UPDATE profiles SET provisioned_by_app_id = ${appId}, privacy_mode = 'hipaa' WHERE id = ${world.profileId}`
        const own = yield* receiver
        const app = yield* receiver
        yield* subscribe(world.key, { url: own.url })
        yield* subscribe(appKey, { url: app.url, event_types: ["outcome.recorded", "connection.connected"] })
        yield* topicRow(world, "connection.connected", { provider: "crm" })
        const [healthcare] = yield* outcomeRows(world, 1, { provisioned_by_app_id: appId, healthcare_family: true })
        const [plain] = yield* outcomeRows(world, 1)
        yield* waitHooks(app.hooks, 3, "the app's three events")
        yield* waitHooks(own.hooks, 1, "the profile key's plain outcome")
        // Three batches: order is promised within a batch only, so compare as sets.
        assert.deepStrictEqual(app.hooks.map((h) => h.body.type).sort(), ["connection.connected", "outcome.recorded", "outcome.recorded"])
        const outcomes = app.hooks.filter((h) => h.body.type === "outcome.recorded")
        assert.sameMembers(outcomes.map((h) => h.body.id), [healthcare, plain])
        // The app's grant holds customers:read: the contact key is there (null: no live customer behind these rows).
        for (const hook of outcomes) assert.property(hook.body.data, "contact")
        yield* Effect.sleep(Duration.millis(500))
        assert.deepStrictEqual(own.hooks.map((h) => h.body.id), [plain])
        // With the attribution add-on off (connect-broker tier), outcomes are not delivered; lifecycle events still are.
        yield* sql`UPDATE entitlements SET enabled = false WHERE profile_id = ${world.profileId} AND feature = 'svc_attribution'`
        yield* outcomeRows(world, 1)
        const connected = yield* topicRow(world, "connection.connected", { provider: "email" })
        yield* waitHooks(app.hooks, 4, "the lifecycle event on the connect-broker tier")
        assert.strictEqual(app.hooks[3]!.body.id, connected)
        yield* Effect.sleep(Duration.millis(400))
        assert.strictEqual(app.hooks.length, 4)
        assert.strictEqual(own.hooks.length, 1)
      }))

    it.effect("a 410 releases what waits behind it; a failing endpoint holds no other subscription; a deletion releases its rows", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        const gone = yield* receiver
        gone.answer.next = () => ({ status: 410 })
        const failing = yield* receiver
        failing.answer.next = () => ({ status: 500 })
        const healthy = yield* receiver
        const goneSub = yield* subscribe(world.key, { url: gone.url })
        const failingSub = yield* subscribe(world.key, { url: failing.url })
        yield* subscribe(world.key, { url: healthy.url })
        const ids = yield* outcomeRows(world, 3)
        yield* waitHooks(healthy.hooks, 3, "the healthy subscription's three deliveries")
        assert.deepStrictEqual(healthy.hooks.map((h) => h.body.id), ids)
        // Meanwhile the failing endpoint's first event is still on its ladder, the others behind it, in order.
        const held = yield* deliveries(world.key, `?subscription_id=${failingSub.id}`)
        assert.isTrue(held.every((row) => row.status === "pending"), JSON.stringify(held))
        assert.isTrue(failing.hooks.every((h) => h.body.id === ids[0]))
        const goneLog = yield* eventually(
          deliveries(world.key, `?subscription_id=${goneSub.id}`),
          (rows) => rows.length === 3 && rows.every((row) => row.status === "failed"),
          { what: "the disabled subscription's rows released", within: "5 seconds" }
        )
        const byEvent = new Map(goneLog.map((row) => [row.event_id, row] as const))
        assert.include(byEvent.get(ids[0]!), { last_status_code: 410, last_error: "endpoint_gone" })
        for (const id of ids.slice(1)) assert.include(byEvent.get(id), { last_status_code: null, last_error: "subscription_disabled" })
        assert.strictEqual(gone.hooks.length, 1)
        // A deleted subscription's waiting rows end failed at once, and are never sent.
        yield* send(world.key, "DELETE", `/api/v1/webhooks/subscriptions/${failingSub.id}`)
        const released = yield* deliveries(world.key, `?subscription_id=${failingSub.id}`)
        assert.isTrue(released.every((row) => row.status === "failed"), JSON.stringify(released))
        // The one on its ladder included (an attempt under way loses its lease and records nothing).
        assert.sameMembers(released.filter((row) => row.last_error === "subscription_deleted").map((row) => row.event_id), ids)
        const sent = failing.hooks.length
        yield* Effect.sleep(Duration.millis(600))
        assert.strictEqual(failing.hooks.length, sent)
      }))

    it.effect("endpoints that do not answer hold one slot each for their timeout, not the other subscriptions", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        // Takes the request and never answers: the attempt ends at the 2 s timeout.
        const started: Array<number> = []
        const silent = yield* Effect.acquireRelease(
          Effect.callback<{ url: string; close: () => void }>((resume) => {
            const server = createServer((request) => {
              started.push(Date.now())
              request.resume()
            })
            server.listen(0, "127.0.0.1", () => {
              const address = server.address()
              const port = typeof address === "object" && address !== null ? address.port : 0
              resume(Effect.succeed({ url: `http://127.0.0.1:${port}/hooks`, close: () => { server.closeAllConnections(); server.close() } }))
            })
          }),
          (server) => Effect.sync(() => server.close())
        )
        const healthy = yield* receiver
        // Three silent subscriptions: more than any one claim could wait behind.
        for (const n of [1, 2, 3]) yield* subscribe(world.key, { url: `${silent.url}?n=${n}` })
        yield* subscribe(world.key, { url: healthy.url })
        const ids = yield* outcomeRows(world, 3)
        yield* waitHooks(healthy.hooks, 3, "the healthy subscription's deliveries")
        yield* eventually(Effect.sync(() => started.length), (n) => n >= 1, { what: "the silent endpoint's request", within: "5 seconds" })
        assert.deepStrictEqual(healthy.hooks.map((h) => h.body.id), ids)
        // All three arrived before the silent endpoint's first attempt could time out.
        assert.isBelow(healthy.hooks[2]!.at - started[0]!, 2000)
      }))

    it.effect("unrelated events to one slow endpoint go out concurrently; one producer batch still goes in order (issue 34)", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        // Answers each request after 300 ms; counts how many it holds at once.
        let open = 0
        let most = 0
        const got: Array<string> = []
        const slow = yield* Effect.acquireRelease(
          Effect.callback<{ url: string; close: () => void }>((resume) => {
            const server = createServer((request, response) => {
              open++
              most = Math.max(most, open)
              const chunks: Array<Buffer> = []
              request.on("data", (chunk: Buffer) => chunks.push(chunk))
              request.on("end", () => {
                setTimeout(() => {
                  got.push(JSON.parse(Buffer.concat(chunks).toString("utf8")).id)
                  open--
                  response.writeHead(200).end()
                }, 300)
              })
            })
            server.listen(0, "127.0.0.1", () => {
              const address = server.address()
              const port = typeof address === "object" && address !== null ? address.port : 0
              resume(Effect.succeed({ url: `http://127.0.0.1:${port}/hooks`, close: () => { server.closeAllConnections(); server.close() } }))
            })
          }),
          (server) => Effect.sync(() => server.close())
        )
        yield* subscribe(world.key, { url: slow.url })
        // Twenty producer calls of one event each (twenty transactions), then one batch of five.
        const single: Array<string> = []
        for (let n = 0; n < 20; n++) single.push(...(yield* outcomeRows(world, 1)))
        const batch: ReadonlyArray<string> = yield* outcomeRows(world, 5)
        const began = Date.now()
        yield* eventually(Effect.sync(() => got.length), (n) => n >= 25, { what: "25 deliveries", within: "15 seconds" })
        // One at a time this is 25 x 300 ms = 7.5 s; the unrelated twenty overlap, the batch's five follow one another.
        assert.isAbove(most, 5, `at most ${most} requests at once`)
        assert.isBelow(Date.now() - began, 5000)
        assert.sameMembers(got, [...single, ...batch])
        assert.deepStrictEqual(got.filter((id) => batch.includes(id)), batch)
      }))

    it.effect("rotate-secret retried at once keeps every earlier secret signing for its own grace", () =>
      Effect.gen(function*() {
        const world = yield* fixture()
        const hooks = yield* receiver
        const sub = yield* subscribe(world.key, { url: hooks.url })
        const first = yield* send(world.key, "POST", `/api/v1/webhooks/subscriptions/${sub.id}/rotate-secret`)
        const retried = yield* send(world.key, "POST", `/api/v1/webhooks/subscriptions/${sub.id}/rotate-secret`)
        assert.strictEqual(first.status, 200, first.text)
        assert.strictEqual(retried.status, 200, retried.text)
        assert.approximately(Date.parse(retried.json.data.previous_secret_expires_at) - Date.now(), 24 * 3600 * 1000, 60_000)
        yield* outcomeRows(world, 1)
        yield* waitHooks(hooks.hooks, 1, "a delivery after two rotations")
        const hook = hooks.hooks[0]!
        // The receiver still holding the original secret verifies it: nothing was cut short.
        assert.deepStrictEqual(hook.headers["webhook-signature"]!.split(" "), [
          signature(retried.json.data.secret, hook),
          signature(first.json.data.secret, hook),
          signature(sub.secret, hook)
        ])
      }))

    it.effect("message.received from the nested entry[] pushes of the social and chat kinds, once per message; receipts and replays add nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const world = yield* fixture()
        const hooks = yield* receiver
        yield* subscribe(world.key, { url: hooks.url, event_types: ["message.received"] })
        const socialAccount = `ig-${crypto.randomUUID()}`
        const chatAccount = `waba-${crypto.randomUUID()}`
        const socialConnection = crypto.randomUUID()
        const chatConnection = crypto.randomUUID()
        yield* sql`INSERT INTO connections (id, profile_id, provider, provider_kind, external_account_id)
                   VALUES (${socialConnection}, ${world.profileId}, 'social_dm', 'social_dm', ${socialAccount}),
                          (${chatConnection}, ${world.profileId}, 'chat_app_a', 'chat_app_a', ${chatAccount})`
        const push = (provider: "social_dm" | "chat_app_a", body: unknown) => {
          const raw = JSON.stringify(body)
          // Named as the sandbox names its pushes: the world of the profile they are for (decision 0109).
          return call(`/hooks/${provider}`, {
            method: "POST",
            headers: { "content-type": "application/json", ...signCallback(provider, sandboxSecretOf(provider), raw), "x-sandbox-world": worldHandle(world.profileId) },
            body: raw
          })
        }
        const socialMid = `mid-${crypto.randomUUID()}`
        const social = {
          object: "instagram",
          entry: [{
            id: socialAccount,
            time: Date.now(),
            messaging: [
              { sender: { id: "user-1" }, recipient: { id: socialAccount }, timestamp: 1764000000000, message: { mid: socialMid, text: "Hi there" } },
              { sender: { id: socialAccount }, recipient: { id: "user-1" }, timestamp: 1764000001000, delivery: { mids: ["mid-out"], watermark: 1, status: "delivered" } }
            ]
          }]
        }
        const chatId = `wamid-${crypto.randomUUID()}`
        const chat = {
          object: "chat_app_a_business_account",
          entry: [{
            id: chatAccount,
            changes: [{
              field: "messages",
              value: {
                messaging_product: "chat_app_a",
                metadata: { display_phone_number: "+15550001", phone_number_id: "pn-1" },
                messages: [{ id: chatId, from: "15557777", timestamp: "1764000100", type: "text", text: { body: "Price?" } }]
              }
            }, {
              field: "messages",
              value: { messaging_product: "chat_app_a", statuses: [{ id: "wamid-out", status: "read", timestamp: "1764000200", recipient_id: "15557777" }] }
            }]
          }]
        }
        for (const [provider, body] of [["social_dm", social], ["chat_app_a", chat], ["social_dm", social], ["chat_app_a", chat]] as const) {
          const answer = yield* push(provider, body)
          assert.strictEqual(answer.status, 200, answer.text)
        }
        yield* waitHooks(hooks.hooks, 2, "one message.received per pushed message")
        const byChannel = new Map(hooks.hooks.map((h) => [h.body.data.channel, h.body] as const))
        assert.include(byChannel.get("social_dm"), { type: "message.received", provider: "social_dm" })
        assert.include(byChannel.get("social_dm").data, {
          message_id: socialMid, from: "user-1", to: socialAccount, text: "Hi there",
          connection_id: socialConnection, received_at: "2025-11-24T16:00:00.000Z"
        })
        assert.include(byChannel.get("chat_app_a").data, {
          message_id: chatId, from: "15557777", to: "+15550001", text: "Price?", connection_id: chatConnection
        })
        const rows = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM outbox WHERE profile_id = ${world.profileId} AND topic = 'message.received'`
        assert.strictEqual(rows[0]!.n, 2)
        yield* Effect.sleep(Duration.millis(400))
        assert.strictEqual(hooks.hooks.length, 2)
      }))
  })
})

/** Rows the worker claims: no first attempts from the fan-out (decision 0157), so runs of claimed rows are what is tested. */
const claimedOnly = Layer.succeed(WebhookSettings)({
  ...defaultWebhookSettings,
  pollInterval: Duration.millis(100),
  lease: Duration.seconds(3),
  ladder: [Duration.zero, Duration.millis(400), Duration.millis(800), Duration.millis(1200)],
  timeout: Duration.seconds(2),
  firstAttempts: Duration.zero
})

layer(serveApp(testSettings({ webhookAllowHosts: ["127.0.0.1"] })).pipe(Layer.provide(claimedOnly)), {
  timeout: "120 seconds",
  excludeTestServices: true
})("webhooks: runs of claimed rows", (it) => {
    it.effect("a run whose leases cannot be renewed sends nothing once they may have run out: repeats only of what it sent before", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        // 20 requests answered after 300 ms; at the first, the batch's 17th row (leased ahead by the
        // run) locked for 5 s: the heartbeat's renewal of the run's rows waits on it and their 3 s
        // leases run out; a claim may then take the batch's head again, as another runner would.
        const { ids, lock, received } = yield* batchPastALock(20, 300, 5_000, (ids) => sql`SELECT id FROM webhook_deliveries WHERE event_id = ${ids[16]!} FOR UPDATE`)
        // Three quarters of the 3 s lease from its last renewal (at the latest when the lock was
        // taken), and a request's way to the receiver.
        repeatsOnlyBefore(received, ids, lock.at + 2_250 + 300)
      }))

    it.effect("a run stopped by a lost result gives back the row it was sending: its batch goes on (no lease renewed for ever)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const context = yield* Effect.context<SqlClient>()
        const world = yield* fixture()
        // One batch of three. The first request: before it is answered, "another runner" takes its
        // row (a new lease token), so its result is not written and the run stops, while the second
        // request (answered 1.5 s later the first time) is under way.
        const seen = new Map<string, number>()
        const server = yield* scriptedReceiver((id, n, answer) => {
          seen.set(id, n)
          const position = batch.indexOf(id)
          if (position === 0 && n === 1) {
            void Effect.runPromiseWith(context)(sql`
              UPDATE webhook_deliveries SET lease_token = ${crypto.randomUUID()}, lease_until = now() + interval '1 second'
              WHERE event_id = ${id}`).then(answer)
          } else if (position === 1 && n === 1) {
            setTimeout(answer, 1500)
          } else answer()
        })
        const sub = yield* subscribe(world.key, { url: server.url })
        const batch: ReadonlyArray<string> = yield* outcomeRows(world, 3)
        // The taken row comes back when its lease runs out (1 s); the second one, given back, follows
        // it. Left held, the second row's lease would be renewed by the heartbeat while the process lives.
        const settled = yield* eventually(
          deliveries(world.key, `?subscription_id=${sub.id}`),
          (rows) => rows.length === 3 && rows.every((row) => row.status === "succeeded"),
          { what: "the batch delivered", within: "15 seconds" }
        )
        assert.strictEqual(settled.length, 3)
        assert.isAtLeast(seen.get(batch[0]!) ?? 0, 2)
        // Order within the batch holds for the results that counted: each row completed after the one before it.
        const completed = batch.map((id) => Date.parse(settled.find((row) => row.event_id === id)!.completed_at))
        assert.isAtMost(completed[0]!, completed[1]!)
        assert.isAtMost(completed[1]!, completed[2]!)
      }))
})

/** First attempts from the fan-out for a short while only (decision 0157): what is still under way then is handed over. */
const shortFirsts = Layer.succeed(WebhookSettings)({
  ...defaultWebhookSettings,
  pollInterval: Duration.millis(100),
  lease: Duration.seconds(3),
  ladder: [Duration.zero, Duration.millis(400), Duration.millis(800), Duration.millis(1200)],
  timeout: Duration.seconds(5),
  firstAttempts: Duration.millis(300)
})

layer(serveApp(testSettings({ webhookAllowHosts: ["127.0.0.1"] })).pipe(Layer.provide(shortFirsts)), {
  timeout: "120 seconds",
  excludeTestServices: true
})("webhooks: first attempts from the fan-out", (it) => {
  it.effect("a first attempt still under way when the fan-out writes is written leased to it, recorded once it ends; its batch goes on in order", () =>
    Effect.gen(function*() {
      const world = yield* fixture()
      // The batch's first request is answered only when the test says so: its row must be there
      // first, pending, written while the request was under way (the fan-out's window is 300 ms).
      const received: Array<string> = []
      let release: () => void = () => {}
      const server = yield* scriptedReceiver((id, _n, answer) => {
        received.push(id)
        if (received.length === 1) release = answer
        else answer()
      })
      const sub = yield* subscribe(world.key, { url: server.url })
      const batch: ReadonlyArray<string> = yield* outcomeRows(world, 4)
      const underway = yield* eventually(
        deliveries(world.key, `?subscription_id=${sub.id}`),
        (rows) => rows.length === 4,
        { what: "the batch written while its first request is under way", within: "10 seconds" }
      )
      assert.deepStrictEqual(received, [batch[0]])
      const head = underway.find((row) => row.event_id === batch[0])
      assert.strictEqual(head?.status, "pending")
      assert.strictEqual(head?.attempts, 0)
      assert.isTrue(underway.every((row) => row.status === "pending" && row.attempts === 0))
      release()
      const done = yield* eventually(
        deliveries(world.key, `?subscription_id=${sub.id}`),
        (rows) => rows.length === 4 && rows.every((row) => row.status === "succeeded"),
        { what: "the batch delivered", within: "15 seconds" }
      )
      assert.deepStrictEqual(received, [...batch], "each event once, in the batch's order")
      for (const row of done) {
        assert.strictEqual(row.attempts, 1)
        const log = yield* attemptLog(world.key, row.id)
        assert.deepStrictEqual(log.map((entry) => [entry.attempt, entry.status_code]), [[1, 200]])
      }
    }))

  it.effect("rows a dead window leased are taken again: only the deliveries it did not write go out, in its batch, in order", () =>
    Effect.gen(function*() {
      const world = yield* fixture()
      const hooks = yield* receiver
      const sub = yield* subscribe(world.key, { url: hooks.url })
      const sql = yield* SqlClient
      const batchId = crypto.randomUUID()
      // One transaction, so no fan-out sees the rows before the window's results are there.
      const ids = yield* sql.withTransaction(Effect.gen(function*() {
        const ids = yield* outcomeRows(world, 4, {}, true)
        // The dead window wrote the first two, with their results.
        yield* sql`
          INSERT INTO webhook_deliveries (id, subscription_id, profile_id, outbox_id, event_id, event_type, body, batch_id, seq,
                                          status, attempts, completed_at)
          SELECT gen_random_uuid(), ${sub.id}, ${world.profileId}, t.id, t.id::text, 'outcome.recorded', '{}', ${batchId}, t.n - 1,
                 'succeeded', 1, now()
          FROM unnest(${ids.slice(0, 2)}::uuid[]) WITH ORDINALITY AS t(id, n)`
        return ids
      }))
      yield* eventually(
        deliveries(world.key, `?subscription_id=${sub.id}`),
        (rows) => rows.length === 4 && rows.every((row) => row.status === "succeeded"),
        { what: "the rest of the batch delivered", within: "15 seconds" }
      )
      assert.deepStrictEqual(hooks.hooks.map((hook) => hook.body.id), ids.slice(2), "only the two not written, in order")
      const batches = yield* sql<{ batch_id: string }>`
        SELECT DISTINCT batch_id::text AS batch_id FROM webhook_deliveries WHERE subscription_id = ${sub.id}`
      assert.deepStrictEqual(batches.map((row) => row.batch_id), [batchId])
      yield* allPublished(ids)
    }))

  it.effect("a delivery that succeeds at once is written with its result and its one attempt logged", () =>
    Effect.gen(function*() {
      const world = yield* fixture()
      const hooks = yield* receiver
      const sub = yield* subscribe(world.key, { url: hooks.url })
      const batch: ReadonlyArray<string> = yield* outcomeRows(world, 3)
      const done = yield* eventually(
        deliveries(world.key, `?subscription_id=${sub.id}`),
        (rows) => rows.length === 3 && rows.every((row) => row.status === "succeeded"),
        { what: "the batch delivered", within: "10 seconds" }
      )
      assert.deepStrictEqual(hooks.hooks.map((hook) => hook.body.id), [...batch])
      for (const row of done) {
        assert.strictEqual(row.attempts, 1)
        assert.strictEqual(row.last_status_code, 200)
        assert.isNotNull(row.completed_at)
        assert.isNull(row.next_attempt_at)
        const log = yield* attemptLog(world.key, row.id)
        assert.deepStrictEqual(log.map((entry) => [entry.attempt, entry.status_code]), [[1, 200]])
      }
      // Written once, with its result: the statement that wrote the row recorded the attempt (its
      // now() is both times). A claimed row is written by the fan-out, then its result by a later statement.
      const sql = yield* SqlClient
      const versions = yield* sql<{ once: boolean }>`
        SELECT d.last_attempt_at <= d.created_at AS once FROM webhook_deliveries d WHERE d.subscription_id = ${sub.id}`
      assert.deepStrictEqual(versions.map((row) => row.once), [true, true, true])
    }))
})
