/**
 * The CRM and card-gateway syncs resume at their job's checkpoint (decision 0065, migration 0030),
 * as the commerce sync does: each wholly written batch stores the provider's latest instant of the
 * batch, and an attempt that takes over a job reads from there (inclusive) instead of from the
 * start. The worker is stepped by hand; the provider is the in-repo sandbox over real HTTP.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { defaultSyncWorkerSettings, SyncWorker, SyncWorkerSettings } from "../../src/ingestion/sync/worker.ts"
import { call } from "../support/app.ts"
import { connectProvider, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth } from "../support/sandbox-world.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const bearer = (key: string, method = "GET", body?: unknown) => ({
  method,
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

const manual = Layer.succeed(SyncWorkerSettings)({ ...defaultSyncWorkerSettings, enabled: false })

interface Case {
  readonly provider: "crm" | "cardgw"
  /** The sandbox state's list and the instant the sync pages by. */
  readonly items: "deals" | "payments"
  readonly at: "updated_at" | "created_at"
  /** The progress count of the sync. */
  readonly counted: "deals" | "payments"
}

const CASES: ReadonlyArray<Case> = [
  { provider: "crm", items: "deals", at: "updated_at", counted: "deals" },
  { provider: "cardgw", items: "payments", at: "created_at", counted: "payments" }
]

layer(serveAppOnOwnPort().pipe(Layer.provide(manual)), { timeout: "120 seconds", excludeTestServices: true })("sync checkpoints", (it) => {
  for (const c of CASES) {
    it.effect(`${c.provider}: a job taken over resumes at its checkpoint, and each batch leaves the latest instant as the checkpoint`, () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["connections:read", "connections:write"], rateLimitPerMinute: 1000 })
        const { connectionId } = yield* connectProvider(key, c.provider)
        const list = yield* call("/api/v1/connections", bearer(key))
        const account: string = list.json.data.find((x: { id: string }) => x.id === connectionId).provider_account_id

        // The profile's own sandbox world (decision 0109), opened with its key.
        const state = yield* call(`/sandbox/${c.provider}/_state`, { headers: keyAuth(key) })
        assert.strictEqual(state.status, 200, state.text)
        const instants = (state.json[c.items] as ReadonlyArray<Record<string, string>>)
          .filter((item) => item["account_id"] === account)
          .map((item) => item[c.at] ?? "")
          .sort((a, b) => Date.parse(a) - Date.parse(b))
        assert.isAtLeast(instants.length, 3, state.text.slice(0, 300))
        // Where an attempt that crashed had got to: everything before it is written.
        const checkpoint = instants[Math.floor(instants.length / 2)] ?? ""
        const fromCheckpoint = instants.filter((at) => Date.parse(at) >= Date.parse(checkpoint)).length
        assert.isBelow(fromCheckpoint, instants.length)

        const queued = yield* call("/api/v1/connections/sync", bearer(key, "POST", { connection_id: connectionId }))
        assert.strictEqual(queued.status, 202, queued.text)
        const jobId: string = queued.json.data[0].job_id
        yield* sql`UPDATE sync_jobs SET checkpoint = ${checkpoint} WHERE id = ${jobId}`

        const worker = yield* SyncWorker
        let job: Record<string, any> = {}
        for (let step = 0; step < 5 && job["status"] !== "done"; step++) {
          const ran = yield* worker.runNext
          if (Option.isNone(ran)) break
          job = (yield* call(`/api/v1/connections/sync/${jobId}`, bearer(key))).json.data
        }
        assert.strictEqual(job["status"], "done", JSON.stringify(job))
        // Read from the checkpoint on (inclusive), not from the start.
        assert.strictEqual(job["progress"][c.counted], fromCheckpoint, JSON.stringify(job["progress"]))
        const [row] = yield* sql<{ checkpoint: string | null }>`SELECT checkpoint FROM sync_jobs WHERE id = ${jobId}`
        assert.strictEqual(Date.parse(row?.checkpoint ?? ""), Date.parse(instants[instants.length - 1] ?? ""), "the last batch's latest instant")
      }))
  }
})
