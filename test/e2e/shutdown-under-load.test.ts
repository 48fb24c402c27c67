/**
 * SIGTERM with 100 keep-alive writers and the CPU kept busy: every request that was sent gets an
 * HTTP answer (2xx, or 503 with Retry-After), none is reset, and every acknowledged write is in
 * the database afterwards. The writers are `POST /api/v1/events` with an API key seeded before
 * the service starts; busy-loop processes (two per core) hold the CPU for the whole run. Before
 * the drain waited 2 s (not 250 ms) for an idle connection, this reset up to 61 of ~180 requests.
 * (On the embedded database this load alone also makes a few requests wait past the client's
 * 30 s before the signal: one session, served unevenly.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { type ChildProcess, spawn } from "node:child_process"
import { Agent } from "node:http"
import { availableParallelism } from "node:os"
import { AppConfig } from "../../src/platform/config.ts"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { migrate } from "../../src/platform/migrator.ts"
import { migratedDataDir, testSettings } from "../support/app.ts"
import { seedEventsProfile } from "../support/events.ts"
import { type Outcome, send, startService, stopService, waitUntil } from "../support/service-process.ts"

const databaseUrl = process.env["DATABASE_URL"]

const WRITERS = 100
/** Two spinning processes per core: the service, the writers and the database share what is left. */
const BUSY_PROCESSES = 2 * availableParallelism()

/** The database the service will run on, opened in this process while the service is not running. */
const onDatabase = <A, E>(target: { readonly env: Record<string, string> }, effect: Effect.Effect<A, E, SqlClient>) => {
  const url = target.env["DATABASE_URL"]
  const settings = testSettings({
    databaseUrl: url === undefined ? Option.none() : Option.some(Redacted.make(url)),
    dataDir: target.env["SVC_DATA_DIR"] ?? migratedDataDir("shutdown")
  })
  // Migrated first: this file may be the first of a run on a fresh database.
  return Effect.runPromise(Effect.andThen(migrate, effect).pipe(Effect.provide(DatabaseLayer), Effect.provide(AppConfig.layerWith(settings)), Effect.scoped))
}

/** A process spinning on one core until killed. */
const busyLoop = (): ChildProcess => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" })

interface Sent {
  readonly key: string
  readonly doneAt: number
  readonly outcome: Outcome
}

/**
 * PostgreSQL only for now: on the embedded database (PGlite in the service's event loop) 20 to 99
 * of ~100 requests are still reset right when the listener closes (issue 30 item 12, open).
 */
describe.skipIf(databaseUrl === undefined)("SIGTERM under load", () => {
  const target = { name: "postgres", env: { DATABASE_URL: databaseUrl ?? "" } }

  it(`answers every request in flight (${WRITERS} keep-alive writers, busy CPU), keeps every acknowledged write (${target.name})`, {
    timeout: 240_000
  }, async () => {
    const profile = await onDatabase(target, seedEventsProfile())
    // `npm start`, signalled as the issue measured it (npm passes the signal on to node).
    const service = await startService(target.env, { viaNpm: true })
    const busy: Array<ChildProcess> = []
    try {
      await waitUntil(async () => {
        const outcome = await send(new Agent({ keepAlive: false }), `${service.baseUrl}/readyz`, { timeoutMs: 1_000 })
        return outcome.kind === "answered" && outcome.status === 200
      }, 90_000, "the service to be ready")
      for (let i = 0; i < BUSY_PROCESSES; i++) busy.push(busyLoop())

      const agent = new Agent({ keepAlive: true, maxSockets: WRITERS })
      const sent: Array<Sent> = []
      const answeredPerWriter = Array.from({ length: WRITERS }, () => 0)
      let stopped = false
      void service.exited.then(() => {
        stopped = true
      })
      const writer = async (n: number) => {
        while (!stopped) {
          const key = crypto.randomUUID()
          const outcome = await send(agent, `${service.baseUrl}/api/v1/events`, {
            method: "POST",
            headers: { authorization: `Bearer ${profile.key}`, "content-type": "application/json" },
            body: JSON.stringify({ event_name: "signup", idempotency_key: key, user_traits: { external_id: `w${n}` } }),
            timeoutMs: 30_000
          })
          // Refused: the port is closed, the request was never sent; not counted.
          if (outcome.kind === "refused") {
            await new Promise((resolve) => setTimeout(resolve, 20))
            continue
          }
          sent.push({ key, doneAt: Date.now(), outcome })
          if (outcome.kind === "answered") answeredPerWriter[n]! += 1
        }
      }
      const writers = Promise.all(Array.from({ length: WRITERS }, (_, n) => writer(n)))
      // Under way: three answers per writer on average, so connections are being reused (each
      // writer always has a request out). Not per writer: on the embedded database a few wait long.
      await waitUntil(
        () => Promise.resolve(answeredPerWriter.reduce((sum, count) => sum + count, 0) >= 3 * WRITERS),
        90_000,
        "three answers per writer on average"
      )
      const signalledAt = Date.now()
      service.child.kill("SIGTERM")
      const exit = await service.exited
      const exitedAfterMs = Date.now() - signalledAt
      await writers
      agent.destroy()
      for (const child of busy) child.kill("SIGKILL")
      busy.length = 0

      const kinds = (kind: Outcome["kind"]) => sent.filter((request) => request.outcome.kind === kind).length
      const unanswered = sent.filter((request) => request.outcome.kind !== "answered")
      const wrongAnswers = sent.flatMap(({ outcome }) =>
        outcome.kind === "answered" && !(outcome.status === 200 ||
            (outcome.status === 503 && outcome.headers["retry-after"] !== undefined))
          ? [{ status: outcome.status, body: outcome.body.slice(0, 200) }]
          : []
      )
      const acknowledged = sent.flatMap(({ key, outcome }) => outcome.kind === "answered" && outcome.status === 200 ? [key] : [])
      const unavailable = sent.filter(({ outcome }) => outcome.kind === "answered" && outcome.status === 503).length
      const afterSignal = sent.filter((request) => request.doneAt >= signalledAt)
      console.info(`SIGTERM under load (${target.name}, ${WRITERS} writers, ${BUSY_PROCESSES} busy processes): ` +
        `${sent.length} requests, ${afterSignal.length} finished after the signal, ${acknowledged.length} acknowledged, ` +
        `${unavailable} answered 503, ${kinds("reset")} reset, ${kinds("timeout")} timed out ` +
        `(${unanswered.filter((request) => request.doneAt < signalledAt).length} of them before the signal), ` +
        `${kinds("other")} other; exited ${exitedAfterMs} ms after the signal`)

      expect(exit, service.tail()).toEqual({ code: 0, signal: null })
      // Every request finishing from the signal on was answered. (Before it, the load alone must
      // not reset any either; a request timing out there is latency under load, not the drain.)
      expect(afterSignal.filter((request) => request.outcome.kind !== "answered").map(({ outcome }) => outcome), service.tail())
        .toEqual([])
      expect(afterSignal.length).toBeGreaterThanOrEqual(WRITERS)
      expect(unanswered.filter((request) => request.outcome.kind !== "timeout").map(({ outcome }) => outcome)).toEqual([])
      expect(wrongAnswers).toEqual([])

      // Every acknowledged write is in the database.
      const stored = await onDatabase(target, Effect.gen(function*() {
        const sql = yield* SqlClient
        const rows = yield* sql<{ key: string }>`
          SELECT idempotency_key AS key FROM outcome_events WHERE profile_id = ${profile.profileId}`
        return new Set(rows.map((row) => row.key))
      }))
      expect(acknowledged.filter((key) => !stored.has(key))).toEqual([])
    } finally {
      for (const child of busy) child.kill("SIGKILL")
      await stopService(service)
    }
  })
})
