/**
 * The RPC surface in-process on a single runner: PostgreSQL (a fresh database) when
 * DATABASE_URL is set, the embedded database in a temporary directory otherwise.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Exit, Layer, Schedule, Scope } from "effect"
import { FetchHttpClient } from "effect/http"
import { RpcClient, RpcMiddleware, RpcSerialization } from "effect/rpc"
import { SqlClient } from "effect/sql/SqlClient"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomBytes, randomUUID } from "node:crypto"
import packageJson from "../../package.json" with { type: "json" }
import { RpcAuth, ServiceRpcs } from "../../schema/rpc.ts"
import { AppConfig, loadSettings } from "../../src/platform/config.ts"
import { latestMigrationId } from "../../src/platform/migrator.ts"
import { makeServiceClient } from "../../src/rpc/client.ts"
import { serverLayer, serverPort } from "./support/app.ts"
import { createTestDatabase, type TestDatabase } from "./support/database.ts"

const TOKEN = `rpc-test-${randomBytes(12).toString("hex")}`
const adminUrl = process.env["DATABASE_URL"]

let scope: Scope.Closeable | undefined
let database: TestDatabase | undefined
let dataDir: string | undefined
let appContext: Context.Context<SqlClient> | undefined
let rpcUrl = ""

const urlOf = (port: number) => `http://127.0.0.1:${port}/rpc`

beforeAll(async () => {
  const env: Record<string, string> = { SVC_RPC_TOKEN: TOKEN, SVC_CLUSTER_MODE: "single", LOG_LEVEL: "Warn" }
  if (adminUrl !== undefined && adminUrl !== "") {
    database = await createTestDatabase(adminUrl, "svc_rpc_test")
    env["DATABASE_URL"] = database.url
    // Required on DATABASE_URL (decision 0105).
    env["SVC_SECRETS_KEY"] = randomBytes(32).toString("base64")
  } else {
    dataDir = mkdtempSync(join(tmpdir(), "svc-rpc-test-"))
    env["SVC_DATA_DIR"] = dataDir
  }
  const settings = await Effect.runPromise(
    loadSettings.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))
  )
  const closeable = await Effect.runPromise(Scope.make())
  scope = closeable
  const context = await Effect.runPromise(
    Layer.buildWithScope(serverLayer({ port: 0 }).pipe(Layer.provideMerge(AppConfig.layerWith(settings))), closeable)
  )
  appContext = context
  rpcUrl = urlOf(Effect.runSync(serverPort.pipe(Effect.provideContext(context))))

})

afterAll(async () => {
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  await database?.drop()
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
})

/** Persisted messages the Profile entity stored for one profile, by tag. */
const storedMessages = (profileId: string) =>
  Effect.gen(function*() {
    if (appContext === undefined) return yield* Effect.die("the server did not start")
    const sql = Context.get(appContext, SqlClient)
    return yield* sql<{ tag: string; processed: boolean }>`
      SELECT tag, processed FROM cluster_messages
      WHERE entity_type = 'Profile' AND entity_id = ${profileId} AND kind = 0
      ORDER BY id`
  })

const client = () => makeServiceClient({ url: rpcUrl, credential: TOKEN })

/** A client that sends no Authorization header at all. */
const clientWithoutHeader = (url: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      Layer.merge(
        RpcClient.layerProtocolHttp({ url }).pipe(Layer.provide([FetchHttpClient.layer, RpcSerialization.layerJson])),
        // The client half of the auth middleware, adding no credential.
        RpcMiddleware.layerClient(RpcAuth, ({ next, request }) => next(request))
      )
    )
    return yield* RpcClient.make(ServiceRpcs).pipe(Effect.provideContext(context))
  })

describe("RPC /rpc on a single runner", () => {
  it.live("ServiceStatus reports version, database, migrations and the cluster", () =>
    Effect.gen(function*() {
      const rpc = yield* client()
      // Shard locks are taken shortly after start.
      const status = yield* rpc.ServiceStatus().pipe(
        Effect.repeat({
          schedule: Schedule.spaced("200 millis"),
          until: (s) => s.cluster.shards.owned_by_this_runner === s.cluster.shards.total,
          times: 100
        })
      )
      expect(status.version).toBe(packageJson.version)
      expect(status.database.mode).toBe(adminUrl ? "postgres" : "embedded")
      expect(status.database.location).toBe(database ? `127.0.0.1:5432/${database.name}` : dataDir)
      expect(status.database.reachable).toBe(true)
      expect(status.database.migrations).toEqual({ applied: latestMigrationId, latest: latestMigrationId })
      expect(status.cluster.mode).toBe("single")
      expect(status.cluster.runner_address).toBe("single")
      expect(status.cluster.shards.total).toBe(300)
      expect(status.cluster.shards.owned_by_this_runner).toBe(300)
      expect(status.cluster.runners.length).toBe(1)
      expect(status.cluster.runners[0]?.healthy).toBe(true)
    }), 60_000)

  it.live("ProfileGetState and ProfileBumpRevocationEpoch go through the Profile entity", () =>
    Effect.gen(function*() {
      const rpc = yield* client()
      const profile_id = randomUUID()

      const fresh = yield* rpc.ProfileGetState({ profile_id })
      expect(fresh).toEqual({ profile_id, revocation_epoch: 0, updated_at: null, served_by: "single" })

      const first = yield* rpc.ProfileBumpRevocationEpoch({ profile_id })
      expect(first.revocation_epoch).toBe(1)
      expect(first.served_by).toBe("single")
      expect(first.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

      // The same profile in upper case is the same entity and the same row.
      const second = yield* rpc.ProfileBumpRevocationEpoch({ profile_id: profile_id.toUpperCase() })
      expect(second.profile_id).toBe(profile_id)
      expect(second.revocation_epoch).toBe(2)

      const read = yield* rpc.ProfileGetState({ profile_id })
      expect(read).toEqual(second)

      // Bumps are persisted (and processed); reads are not.
      expect(yield* storedMessages(profile_id)).toEqual([
        { tag: "BumpRevocationEpoch", processed: true },
        { tag: "BumpRevocationEpoch", processed: true }
      ])
    }), 60_000)

  it.live("concurrent bumps of one profile are applied one at a time", () =>
    Effect.gen(function*() {
      const rpc = yield* client()
      const profile_id = randomUUID()
      const results = yield* Effect.forEach(
        Array.from({ length: 8 }),
        () => rpc.ProfileBumpRevocationEpoch({ profile_id }),
        { concurrency: "unbounded" }
      )
      expect(results.map((r) => r.revocation_epoch).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
      const read = yield* rpc.ProfileGetState({ profile_id })
      expect(read.revocation_epoch).toBe(8)
    }), 60_000)

  it.live("a wrong or missing token is refused", () =>
    Effect.gen(function*() {
      const wrong = yield* makeServiceClient({ url: rpcUrl, credential: `${TOKEN}x` })
      const wrongError = yield* Effect.flip(wrong.ServiceStatus())
      expect(wrongError._tag).toBe("Unauthorized")

      const anonymous = yield* clientWithoutHeader(rpcUrl)
      const missingError = yield* Effect.flip(anonymous.ProfileGetState({ profile_id: randomUUID() }))
      expect(missingError._tag).toBe("Unauthorized")
    }), 30_000)
})
