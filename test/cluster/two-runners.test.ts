/**
 * Two socket runners as separate OS processes on a fresh PostgreSQL database: a call made on
 * runner A lands on the shard owner B; after B is SIGKILLed, A takes B's shards over and the
 * profile's state (and a bump sent during the outage) survive.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Schedule } from "effect"
import { randomBytes, randomUUID } from "node:crypto"
import type { ServiceStatusInfo } from "../../schema/rpc.ts"
import { makeServiceClient, type ServiceRpcClient } from "../../src/rpc/client.ts"
import { createTestDatabase, type TestDatabase } from "./support/database.ts"
import { type RunnerProcess, startRunner, stopRunner } from "./support/processes.ts"

const adminUrl = process.env["DATABASE_URL"] ?? ""
const TOKEN = `two-runners-${randomBytes(12).toString("hex")}`

// Short intervals so the test sees a failover in seconds rather than the production ~7 s.
const runnerEnv = {
  SVC_RUNNER_HEALTH_CHECK_MS: "1000",
  SVC_SHARD_LOCK_REFRESH_MS: "1000",
  SVC_SHARD_LOCK_EXPIRATION_MS: "4000"
}

const runners: Array<RunnerProcess> = []
let database: TestDatabase | undefined

const cleanUp = async () => {
  await Promise.all(runners.map((runner) => stopRunner(runner)))
  await database?.drop()
}

const fail = (message: string) => Effect.die(new Error(`${message}\n${runners.map((r) => r.tail()).join("\n")}`))

/** Polls `check` every 250 ms until it yields a value, for at most `within`. */
const waitFor = <A>(description: string, within: Duration.Input, check: Effect.Effect<A | undefined, unknown>) =>
  check.pipe(
    Effect.timeout("5 seconds"),
    Effect.catchCause(() => Effect.succeed(undefined)),
    Effect.flatMap((value) => value === undefined ? Effect.fail("not yet" as const) : Effect.succeed(value)),
    Effect.retry(Schedule.spaced("250 millis")),
    Effect.timeoutOrElse({ duration: within, orElse: () => fail(`timed out waiting for ${description}`) })
  )

const status = (client: ServiceRpcClient) => client.ServiceStatus()

const isSettled = (a: ServiceStatusInfo, b: ServiceStatusInfo, addresses: ReadonlyArray<string>) =>
  a.cluster.shards.owned_by_this_runner > 0 &&
  b.cluster.shards.owned_by_this_runner > 0 &&
  a.cluster.shards.owned_by_this_runner + b.cluster.shards.owned_by_this_runner === a.cluster.shards.total &&
  addresses.every((address) => a.cluster.runners.some((r) => r.address === address && r.healthy))

describe.skipIf(adminUrl === "")(
  adminUrl === "" ? "two socket runners (skipped: DATABASE_URL is not set; it needs a real PostgreSQL)" : "two socket runners",
  () => {
    it.live("routes to the shard owner and fails over after SIGKILL", () =>
      Effect.gen(function*() {
        yield* Effect.addFinalizer(() => Effect.promise(cleanUp))
        database = yield* Effect.promise(() => createTestDatabase(adminUrl))
        const databaseUrl = database.url

        // A first, so migrations run once; B joins the running cluster.
        const a = yield* Effect.promise(() => startRunner({ name: "A", databaseUrl, token: TOKEN, env: runnerEnv }))
        runners.push(a)
        const clientA = yield* makeServiceClient({ url: a.rpcUrl, credential: TOKEN })
        // Starting a process (and migrating) can take most of 30 s on a loaded machine: the
        // cluster deadlines below count from the moment the runner answers.
        yield* waitFor("runner A to answer", "90 seconds", status(clientA))
        yield* waitFor("runner A to own every shard", "30 seconds", Effect.map(status(clientA), (s) =>
          s.cluster.shards.owned_by_this_runner === s.cluster.shards.total ? s : undefined))

        const b = yield* Effect.promise(() => startRunner({ name: "B", databaseUrl, token: TOKEN, env: runnerEnv }))
        runners.push(b)
        const clientB = yield* makeServiceClient({ url: b.rpcUrl, credential: TOKEN })
        yield* waitFor("runner B to answer", "90 seconds", status(clientB))
        const settled = yield* waitFor(
          "both runners healthy with the shards split between them",
          "30 seconds",
          Effect.map(Effect.all([status(clientA), status(clientB)]), ([sa, sb]) =>
            isSettled(sa, sb, [a.address, b.address]) ? { sa, sb } : undefined)
        )
        expect(settled.sa.cluster.mode).toBe("socket")
        expect(settled.sa.cluster.runner_address).toBe(a.address)
        expect(settled.sb.cluster.runner_address).toBe(b.address)

        // A profile whose shard B owns, found by asking A.
        const profile_id = yield* waitFor("a profile owned by runner B", "20 seconds", Effect.gen(function*() {
          const candidate = randomUUID()
          const state = yield* clientA.ProfileGetState({ profile_id: candidate })
          return state.served_by === b.address ? candidate : undefined
        }))

        const first = yield* clientA.ProfileBumpRevocationEpoch({ profile_id })
        expect(first.served_by).toBe(b.address)
        expect(first.revocation_epoch).toBe(1)
        const second = yield* clientA.ProfileBumpRevocationEpoch({ profile_id })
        expect(second.served_by).toBe(b.address)
        expect(second.revocation_epoch).toBe(2)

        b.child.kill("SIGKILL")
        const killedAt = Date.now()
        yield* Effect.promise(() => b.exited)

        // Persisted: sent while B is dead, it waits in storage for the next owner.
        const bumpDuringOutage = yield* clientA.ProfileBumpRevocationEpoch({ profile_id }).pipe(
          Effect.retry({ schedule: Schedule.spaced("500 millis"), times: 4 }),
          Effect.forkChild
        )

        const after = yield* waitFor("runner A to serve B's profile", "60 seconds", Effect.map(
          clientA.ProfileGetState({ profile_id }),
          (state) => state.served_by === a.address ? state : undefined
        ))
        const failoverMs = Date.now() - killedAt
        console.log(`failover_ms=${failoverMs}`)

        const outageBump = yield* Fiber.join(bumpDuringOutage).pipe(
          Effect.timeoutOrElse({ duration: "30 seconds", orElse: () => fail("the bump sent during the outage never completed") })
        )
        expect(outageBump.served_by).toBe(a.address)
        expect(outageBump.revocation_epoch).toBe(3)
        // The read may have run before or after the outage bump.
        expect([2, 3]).toContain(after.revocation_epoch)

        const final = yield* clientA.ProfileGetState({ profile_id })
        expect(final.served_by).toBe(a.address)
        expect(final.revocation_epoch).toBe(3)

        const statusAfter = yield* status(clientA)
        expect(statusAfter.cluster.shards.owned_by_this_runner).toBe(statusAfter.cluster.shards.total)
        expect(statusAfter.cluster.runners.find((r) => r.address === b.address)?.healthy ?? false).toBe(false)
      }), 300_000)
  }
)
