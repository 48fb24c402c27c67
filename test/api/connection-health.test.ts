/**
 * One connection-health mechanism (decisions 0092, 0097) over real HTTP: every email send path
 * (reports send, messages) goes through ConnectionHealth; a mailbox refusal shows on
 * `GET /api/v1/connections` as `status: needs_action` with the refusal as `status_reason`, the
 * next accepted send clears it, and each change leaves exactly one `channel.health.updated`
 * outbox row. Two simultaneous first refusals on a healthy connection emit one event.
 */
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { ConnectionHealth } from "../../src/connections/health/service.ts"
import { ConnectionsRepo } from "../../src/connections/repo.ts"
import { defaultReportWorkerSettings, ReportWorkerSettings } from "../../src/analytics/reports/worker.ts"
import { call } from "../support/app.ts"
import { bearer, channelProfile, connectChannel, sandbox } from "../support/channels.ts"
import { eventually } from "../support/eventually.ts"
import { serveAppOnOwnPort } from "../support/providers.ts"

const MAILBOX = "em_mbx_0001"

/** Sets the mailbox's state in the sandbox world of `key`'s profile (decision 0109). */
const setMailbox = (key: string, state: string) =>
  Effect.flatMap(sandbox(key, "email", "PATCH", "_state", { objects: [{ id: MAILBOX, state }] }), (answer) =>
    Effect.sync(() => assert.isBelow(answer.status, 300, answer.text)))

/** Runs `effect` with the mailbox of `key`'s world in `state`, and puts it back to `active` whatever happens. */
const withMailbox = <A, E, R>(key: string, state: string, effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(setMailbox(key, state), () => Effect.ensuring(effect, Effect.ignore(setMailbox(key, "active"))))

const healthEvents = (profileId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ payload: unknown }>`
      SELECT payload FROM outbox WHERE profile_id = ${profileId} AND topic = 'channel.health.updated' ORDER BY created_at, id`).pipe(
      Effect.map((rows) =>
        rows.map((row) => (typeof row.payload === "string" ? JSON.parse(row.payload) : row.payload) as { type: string; data: Record<string, unknown> })
      )
    )

/** The email connection as the connections list shows it: `[status, status_reason]`. */
const listed = (key: string, connectionId: string) =>
  Effect.map(call("/api/v1/connections", bearer(key)), (r) => {
    assert.strictEqual(r.status, 200, r.text)
    const found = r.json.data.find((c: { id: string }) => c.id === connectionId)
    assert.isDefined(found, r.text)
    return [found.status, found.status_reason]
  })

const workerOff = Layer.succeed(ReportWorkerSettings)({ ...defaultReportWorkerSettings, enabled: false })

layer(serveAppOnOwnPort().pipe(Layer.provide(workerOff)), { timeout: "120 seconds", excludeTestServices: true })("connection health", (it) => {
  it.effect("reports send: a refusal shows needs_action on the connection with one event; the next accepted send clears it with one event", () =>
    Effect.gen(function*() {
      const { key, profile } = yield* channelProfile(["reports:write", "analytics:read"])
      const connection = yield* connectChannel(key, "email")
      const created = yield* call("/api/v1/reports", bearer(key, "POST", { name: "Health", reads: ["overview"], range: "today", recipients: ["a@example.com"] }))
      assert.strictEqual(created.status, 201, created.text)
      const path = `/api/v1/reports/${created.json.data.id}/send`

      const refused = yield* withMailbox(key, "suspended", call(path, bearer(key, "POST", {})))
      assert.strictEqual(refused.status, 403, refused.text)
      assert.strictEqual(refused.json.error.code, "account_suspended")
      assert.deepStrictEqual(yield* listed(key, connection.id), ["needs_action", "account_suspended"])
      const afterRefusal = yield* healthEvents(profile.profileId)
      assert.deepStrictEqual(
        afterRefusal.map((e) => [e.type, e.data["connection_id"], e.data["previous_health"], e.data["health"], e.data["reason"]]),
        [["channel.health.updated", connection.id, "ok", "needs_action", "account_suspended"]]
      )

      // The same refusal again changes nothing: no second event.
      const again = yield* withMailbox(key, "suspended", call(path, bearer(key, "POST", {})))
      assert.strictEqual(again.status, 403, again.text)
      assert.strictEqual((yield* healthEvents(profile.profileId)).length, 1)

      const sent = yield* call(path, bearer(key, "POST", {}))
      assert.strictEqual(sent.status, 201, sent.text)
      assert.deepStrictEqual(yield* listed(key, connection.id), ["active", null])
      const events = yield* healthEvents(profile.profileId)
      assert.deepStrictEqual(events.map((e) => [e.data["previous_health"], e.data["health"], e.data["reason"]]), [
        ["ok", "needs_action", "account_suspended"],
        ["needs_action", "ok", null]
      ])
      // A further accepted send on a healthy connection emits nothing.
      const sentAgain = yield* call(path, bearer(key, "POST", {}))
      assert.strictEqual(sentAgain.status, 201, sentAgain.text)
      assert.strictEqual((yield* healthEvents(profile.profileId)).length, 2)
    }))

  it.effect("messages: the same mechanism, visible on the connection list", () =>
    Effect.gen(function*() {
      const { key, profile } = yield* channelProfile(["conversations:read", "conversations:write", "email"])
      const connection = yield* connectChannel(key, "email")
      const message = { channel: "email", to: "p@example.com", subject: "Hi", text: "Hello" }
      const refused = yield* withMailbox(key, "disabled", call("/api/v1/messages", bearer(key, "POST", message)))
      assert.strictEqual(refused.json.error.code, "mailbox_disabled", refused.text)
      assert.deepStrictEqual(yield* listed(key, connection.id), ["needs_action", "mailbox_disabled"])
      const sent = yield* call("/api/v1/messages", bearer(key, "POST", message))
      assert.isBelow(sent.status, 300, sent.text)
      assert.deepStrictEqual(yield* listed(key, connection.id), ["active", null])
      assert.deepStrictEqual((yield* healthEvents(profile.profileId)).map((e) => e.data["health"]), ["needs_action", "ok"])
    }))

  it.effect("two simultaneous first refusals on a healthy connection emit one event", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const { key, profile } = yield* channelProfile([])
      const connected = yield* connectChannel(key, "email")
      const record = yield* (yield* ConnectionsRepo).find(connected.id)
      assert.isTrue(Option.isSome(record))
      if (Option.isNone(record)) return
      const health = yield* ConnectionHealth
      const refusal = { health: "needs_action" as const, reason: "account_suspended", providerCode: "account_suspended" }
      const both = Effect.all([health.record(record.value, refusal), health.record(record.value, refusal)], { concurrency: 2 })

      if (process.env["DATABASE_URL"] === undefined) {
        // PGlite has one connection: the two take turns by construction.
        yield* both
      } else {
        // Hold the outbox so that the first refusal stops just before its event, with its health
        // row written and uncommitted: the second must then wait for it rather than decide alone.
        const release = yield* Deferred.make<void>()
        const held = yield* Deferred.make<void>()
        const holder = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
          yield* sql`LOCK TABLE outbox IN EXCLUSIVE MODE`
          yield* Deferred.succeed(held, undefined)
          yield* Deferred.await(release)
        })))
        yield* Deferred.await(held)
        const racing = yield* Effect.forkChild(both)
        // The second waits on the first's uncommitted health row (a transaction-id lock).
        yield* eventually(
          sql<{ waiting: number }>`SELECT count(*)::int AS waiting FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'`,
          (rows) => (rows[0]?.waiting ?? 0) >= 1,
          { what: "the second refusal waiting on the first", within: "10 seconds", every: "20 millis" }
        )
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        yield* Fiber.join(racing)
      }
      const events = yield* healthEvents(profile.profileId)
      assert.deepStrictEqual(events.map((e) => [e.data["previous_health"], e.data["health"], e.data["reason"]]), [["ok", "needs_action", "account_suspended"]])
      assert.deepStrictEqual(yield* listed(key, connected.id), ["needs_action", "account_suspended"])
    }).pipe(Effect.provide(Layer.mergeAll(ConnectionHealth.layer, ConnectionsRepo.layer))))
})
