/**
 * The request log over real HTTP (issue 33, decision 0130): a profile's `/api/v1` calls appear in
 * `GET /api/v1/request-logs` once the recorder's batch is written (about a second), with the path
 * but never the query string, and never another profile's calls; newest first in keyset pages;
 * the filters; a bad filter 400 naming it; the scope; the 7-day retention.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Metric, Scope } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { RequestLogSink, type RequestLogEntry } from "../../src/kernel/request-log.ts"
import { requestLogRecorder } from "../../src/ops/request-logs/recorder.ts"
import { RequestLogsRepo } from "../../src/ops/request-logs/repo.ts"
import { requestLogDropped } from "../../src/platform/metrics.ts"
import { call, callAs, serveApp, testSettings } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { seedApiKey, seedMemberSession, seedProfile } from "../support/tenancy.ts"

const LOGS = "/api/v1/request-logs"

/** A profile with a key that may read its log and a key that makes the calls (it may read webhooks). */
const fixture = Effect.fn("test.requestLogsFixture")(function*() {
  const profile = yield* seedProfile()
  const reader = yield* seedApiKey(profile, { scopes: ["connections:read"], rateLimitPerMinute: 10_000 })
  const caller = yield* seedApiKey(profile, { scopes: ["connections:read", "analytics:read"], rateLimitPerMinute: 10_000 })
  return { ...profile, reader, caller }
})

/** Calls `path` with `key` and answers the request id its answer carried. */
const made = (key: string, method: string, path: string, expectedStatus: number) =>
  Effect.map(callAs(key, method, path), (answer) => {
    assert.strictEqual(answer.status, expectedStatus, answer.text)
    const requestId = answer.headers.get("x-request-id")
    assert.isString(requestId)
    return requestId ?? ""
  })

const list = (key: string, query = "") =>
  Effect.map(callAs(key, "GET", `${LOGS}${query}`), (answer) => {
    assert.strictEqual(answer.status, 200, answer.text)
    return answer.json as {
      data: Array<Record<string, unknown> & { request_id: string; id: string }>
      pagination: { has_next: boolean; cursor: string | null }
    }
  })

/** Waits until every one of `requestIds` is listed (the recorder writes about every second). */
const untilListed = (key: string, requestIds: ReadonlyArray<string>) =>
  eventually(list(key, "?limit=100"), (page) => requestIds.every((id) => page.data.some((entry) => entry.request_id === id)), {
    what: `request ids ${requestIds.join(", ")} in the request log`,
    within: "15 seconds",
    every: "200 millis"
  })

const rowsOf = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    return yield* sql<{ request_id: string; path: string; route: string | null }>`
      SELECT request_id, path, route FROM request_logs WHERE profile_id = ${profileId} ORDER BY created_at, id`
  })

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("the request log", (it) => {
  describe("GET /api/v1/request-logs", () => {
    it.effect("an API key's call appears after the flush with exactly its fields, the path without its query string", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const requestId = yield* made(f.caller.key, "GET", "/api/v1/webhooks/subscriptions?limit=5", 200)
        const page = yield* untilListed(f.reader.key, [requestId])
        const entry = page.data.find((e) => e.request_id === requestId)
        assert.isDefined(entry)
        const { created_at, duration_ms, id, ...rest } = entry ?? { id: "" }
        assert.deepStrictEqual(rest, {
          request_id: requestId,
          method: "GET",
          path: "/api/v1/webhooks/subscriptions",
          route: "/api/v1/webhooks/subscriptions",
          status: 200,
          principal_kind: "api_key",
          key_id: f.caller.id
        })
        assert.match(String(id), /^[0-9a-f-]{36}$/)
        assert.isTrue(Number.isInteger(duration_ms) && Number(duration_ms) >= 0)
        assert.match(String(created_at), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
        assert.isBelow(Math.abs(Date.parse(String(created_at)) - Date.now()), 60_000)
        // Nothing of the query string (nor of the key) is stored anywhere in the row.
        const sql = yield* SqlClient
        const stored = yield* sql<{ row: string }>`SELECT to_jsonb(r)::text AS row FROM request_logs r WHERE request_id = ${requestId}`
        assert.strictEqual(stored.length, 1)
        assert.notInclude(stored[0]?.row ?? "", "limit")
        assert.notInclude(stored[0]?.row ?? "", "?")
        assert.notInclude(stored[0]?.row ?? "", f.caller.key)
        // Reading the log is not itself logged: a later call is flushed after the reads above, and none of them is there.
        const later = yield* made(f.caller.key, "GET", "/api/v1/webhooks/deliveries", 200)
        yield* untilListed(f.reader.key, [later])
        const rows = yield* rowsOf(f.profileId)
        assert.deepStrictEqual(rows.filter((row) => row.path === LOGS), [])
        assert.strictEqual(rows.length, 2)
      }))

    it.effect("another profile's calls never appear, even asked for by request id", () =>
      Effect.gen(function*() {
        const mine = yield* fixture()
        const theirs = yield* fixture()
        const their = yield* made(theirs.caller.key, "GET", "/api/v1/webhooks/subscriptions", 200)
        const own = yield* made(mine.caller.key, "GET", "/api/v1/webhooks/subscriptions", 200)
        yield* untilListed(theirs.reader.key, [their])
        const page = yield* untilListed(mine.reader.key, [own])
        assert.deepStrictEqual(page.data.map((e) => e.request_id), [own])
        const asked = yield* list(mine.reader.key, `?request_id=${their}`)
        assert.deepStrictEqual(asked, { data: [], pagination: { has_next: false, cursor: null } })
      }))

    it.effect("a console session's calls on the profile are listed as session calls, without a key id", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const person = yield* seedMemberSession(f, "admin")
        const answer = yield* call(`/api/v1/webhooks/subscriptions?profile_id=${f.profileId}`, { headers: person.headers })
        assert.strictEqual(answer.status, 200, answer.text)
        const requestId = answer.headers.get("x-request-id") ?? ""
        yield* untilListed(f.reader.key, [requestId])
        const viaSession = yield* call(`${LOGS}?profile_id=${f.profileId}&request_id=${requestId}`, { headers: person.headers })
        assert.strictEqual(viaSession.status, 200, viaSession.text)
        assert.strictEqual(viaSession.json.data.length, 1)
        assert.include(viaSession.json.data[0], {
          path: "/api/v1/webhooks/subscriptions",
          principal_kind: "session",
          key_id: null,
          status: 200
        })
      }))

    it.effect("newest first in keyset pages; status class and code, method, path prefix and request id filters", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const missing = crypto.randomUUID()
        // In order: two 200s, a 404, a 403 (the key may not write webhooks: refused calls are listed too), a 200.
        const ids: Array<string> = []
        ids.push(yield* made(f.caller.key, "GET", "/api/v1/webhooks/subscriptions", 200))
        ids.push(yield* made(f.caller.key, "GET", "/api/v1/webhooks/deliveries?limit=3", 200))
        ids.push(yield* made(f.caller.key, "GET", `/api/v1/webhooks/deliveries/${missing}/attempts`, 404))
        ids.push(yield* made(f.caller.key, "DELETE", `/api/v1/webhooks/subscriptions/${missing}`, 403))
        ids.push(yield* made(f.caller.key, "GET", "/api/v1/webhooks/subscriptions", 200))
        const all = yield* untilListed(f.reader.key, ids)
        const newestFirst = [...ids].reverse()
        assert.deepStrictEqual(all.data.map((e) => e.request_id), newestFirst)
        assert.deepStrictEqual(all.data.map((e) => e.status), [200, 403, 404, 200, 200])

        // Pages of two: the same order, nothing repeated or skipped.
        const first = yield* list(f.reader.key, "?limit=2")
        assert.strictEqual(first.pagination.has_next, true)
        assert.isString(first.pagination.cursor)
        const second = yield* list(f.reader.key, `?limit=2&cursor=${first.pagination.cursor}`)
        assert.strictEqual(second.pagination.has_next, true)
        const third = yield* list(f.reader.key, `?limit=2&cursor=${second.pagination.cursor}`)
        assert.deepStrictEqual(third.pagination, { has_next: false, cursor: null })
        assert.deepStrictEqual([...first.data, ...second.data, ...third.data].map((e) => e.request_id), newestFirst)

        const ofQuery = (query: string) => Effect.map(list(f.reader.key, query), (page) => page.data.map((e) => e.request_id))
        assert.deepStrictEqual(yield* ofQuery("?status=4xx"), [ids[3], ids[2]])
        assert.deepStrictEqual(yield* ofQuery("?status=404"), [ids[2]])
        assert.deepStrictEqual(yield* ofQuery("?status=2xx"), [ids[4], ids[1], ids[0]])
        assert.deepStrictEqual(yield* ofQuery("?status=5xx"), [])
        assert.deepStrictEqual(yield* ofQuery("?method=DELETE"), [ids[3]])
        assert.deepStrictEqual(yield* ofQuery("?path_prefix=/api/v1/webhooks/deliveries"), [ids[2], ids[1]])
        assert.deepStrictEqual(yield* ofQuery("?path_prefix=/api/v1/webhooks/deliveries&status=2xx"), [ids[1]])
        assert.deepStrictEqual(yield* ofQuery(`?request_id=${ids[2]}`), [ids[2]])
        const refused = all.data.find((e) => e.request_id === ids[3])
        assert.include(refused, { route: "/api/v1/webhooks/subscriptions/:id", path: `/api/v1/webhooks/subscriptions/${missing}` })
      }))

    it.effect("a bad filter or cursor answers 400 invalid_parameter naming it, and nothing is written", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const before = yield* rowsOf(f.profileId)
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["status=6xx", "status"],
          ["status=4XX", "status"],
          ["status=20", "status"],
          ["method=get", "method"],
          ["method=TRACE", "method"],
          ["path_prefix=api/v1", "path_prefix"],
          ["request_id=has%20space", "request_id"],
          ["limit=0", "limit"],
          ["limit=101", "limit"],
          ["cursor=not-a-cursor", "cursor"]
        ]
        for (const [query, name] of cases) {
          const answer = yield* callAs(f.reader.key, "GET", `${LOGS}?${query}`)
          assert.strictEqual(answer.status, 400, `${query}: ${answer.text}`)
          assert.strictEqual(answer.json.error.code, "invalid_parameter", query)
          assert.strictEqual(answer.json.error.reason, `invalid_parameter:${name}`, query)
          assert.include(answer.json.error.message, name, query)
          assert.strictEqual(answer.json.error.request_id, answer.headers.get("x-request-id"))
        }
        // A call made after the refusals is flushed after anything they could have queued: still only it.
        const after = yield* made(f.caller.key, "GET", "/api/v1/webhooks/subscriptions", 200)
        yield* untilListed(f.reader.key, [after])
        const rows = yield* rowsOf(f.profileId)
        assert.deepStrictEqual(before, [])
        assert.deepStrictEqual(rows.map((row) => row.request_id), [after])
      }))

    it.effect("without connections:read: 403 insufficient_scope naming the scope; no credential: 401", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const analyst = yield* seedApiKey(f, { scopes: ["analytics:read", "campaigns:read"], rateLimitPerMinute: 10_000 })
        const refused = yield* callAs(analyst.key, "GET", LOGS)
        assert.strictEqual(refused.status, 403, refused.text)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.include(refused.json.error.message, "connections:read")
        const anonymous = yield* call(LOGS)
        assert.strictEqual(anonymous.status, 401, anonymous.text)
        assert.strictEqual(anonymous.json.error.code, "unauthorized")
      }))
  })

  describe("the recorder", () => {
    const entry = (profileId: string, requestId: string): RequestLogEntry => ({
      profileId,
      requestId,
      method: "GET",
      path: "/api/v1/overview",
      route: "/api/v1/overview",
      status: 200,
      durationMs: 2,
      principalKind: "api_key",
      keyId: null,
      startedAt: Date.now()
    })

    /** A recorder in its own scope, on the real repository: `close` is the service stopping. */
    const recorder = (options: { readonly batchSize: number; readonly capacity: number }) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          requestLogRecorder({ flushEvery: "1 hour", shutdownFlushWithin: "10 seconds", ...options }).pipe(Layer.provide(RequestLogsRepo.layer)),
          scope
        )
        return { sink: Context.get(context, RequestLogSink), close: Scope.close(scope, Exit.void) }
      })

    it.effect("a full batch is written at once, without waiting for the interval", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const { sink, close } = yield* recorder({ batchSize: 2, capacity: 100 })
        sink.offer(entry(f.profileId, "req_batch_one"))
        sink.offer(entry(f.profileId, "req_batch_two"))
        yield* eventually(rowsOf(f.profileId), (rows) => rows.length === 2, { what: "the full batch written", within: "10 seconds" })
        yield* close
      }))

    it.effect("a batch mixing whole and fractional start times is written (the driver types an array by its elements)", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const { sink, close } = yield* recorder({ batchSize: 2, capacity: 100 })
        sink.offer({ ...entry(f.profileId, "req_whole"), startedAt: 1_795_000_000_000 })
        sink.offer({ ...entry(f.profileId, "req_fraction"), startedAt: 1_795_000_000_000.25 })
        yield* eventually(rowsOf(f.profileId), (rows) => rows.length === 2, { what: "the mixed batch written", within: "10 seconds" })
        yield* close
      }))

    it.effect("a batch that fails with a defect (not a database error) is dropped and counted; the writer goes on", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const droppedBefore = (yield* Metric.value(requestLogDropped)).count
        // The real repository, except that a batch carrying a `req_defect` entry dies as a driver bug would.
        const faulty = Layer.effect(RequestLogsRepo)(Effect.gen(function*() {
          const real = yield* RequestLogsRepo
          return RequestLogsRepo.of({
            ...real,
            insert: (entries) =>
              entries.some((e) => e.requestId.startsWith("req_defect")) ? Effect.die(new Error("the driver cannot take this batch")) : real.insert(entries)
          })
        })).pipe(Layer.provide(RequestLogsRepo.layer))
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          requestLogRecorder({ flushEvery: "1 hour", shutdownFlushWithin: "10 seconds", batchSize: 2, capacity: 100 }).pipe(Layer.provide(faulty)),
          scope
        )
        const sink = Context.get(context, RequestLogSink)
        sink.offer(entry(f.profileId, "req_defect_one"))
        sink.offer(entry(f.profileId, "req_defect_two"))
        yield* eventually(Metric.value(requestLogDropped), (value) => value.count - droppedBefore === 2, { what: "the batch dropped and counted", within: "10 seconds" })
        // The writer is still there: the next full batch is written.
        sink.offer(entry(f.profileId, "req_after_one"))
        sink.offer(entry(f.profileId, "req_after_two"))
        yield* eventually(rowsOf(f.profileId), (rows) => rows.length === 2, { what: "the next batch written", within: "10 seconds" })
        assert.deepStrictEqual((yield* rowsOf(f.profileId)).map((row) => row.request_id).sort(), ["req_after_one", "req_after_two"])
        yield* Scope.close(scope, Exit.void)
        assert.strictEqual((yield* Metric.value(requestLogDropped)).count - droppedBefore, 2)
      }))

    it.effect("bounded: past its capacity the oldest entries are dropped and counted; what is held is written at shutdown", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const droppedBefore = (yield* Metric.value(requestLogDropped)).count
        const { sink, close } = yield* recorder({ batchSize: 1000, capacity: 3 })
        for (const n of [1, 2, 3, 4, 5]) sink.offer(entry(f.profileId, `req_held_${n}`))
        // The interval is an hour and no batch is full: nothing is written before the shutdown.
        assert.deepStrictEqual(yield* rowsOf(f.profileId), [])
        yield* close
        const rows = yield* rowsOf(f.profileId)
        assert.deepStrictEqual(rows.map((row) => row.request_id).sort(), ["req_held_3", "req_held_4", "req_held_5"])
        assert.strictEqual((yield* Metric.value(requestLogDropped)).count - droppedBefore, 2)
      }))
  })

  describe("retention", () => {
    it.effect("entries older than 7 days are not listed; their month goes whole with the partition maintenance", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const sql = yield* SqlClient
        const insert = (requestId: string, age: string) =>
          sql`INSERT INTO request_logs (profile_id, created_at, id, request_id, method, path, route, status, duration_ms, principal_kind, key_id)
              VALUES (${f.profileId}, now() - ${age}::interval, gen_random_uuid(), ${requestId}, 'GET', '/api/v1/overview',
                      '/api/v1/overview', 200, 3, 'api_key', ${f.caller.id})`
        yield* insert("req_old_eight_days", "8 days")
        yield* insert("req_old_seven_days_and_a_minute", "7 days 1 minute")
        yield* insert("req_young_six_days", "6 days")
        const left = yield* list(f.reader.key)
        assert.deepStrictEqual(left.data.map((e) => e.request_id), ["req_young_six_days"])
        // Looked up by its request id, an expired entry is not answered either.
        assert.deepStrictEqual((yield* list(f.reader.key, "?request_id=req_old_eight_days")).data, [])
        // Stored until their month's partition is dropped (test/api/partitions.test.ts), never deleted row by row.
        const rows = yield* rowsOf(f.profileId)
        assert.strictEqual(rows.length, 3)
      }))
  })
})
