/**
 * One trace across two socket runners: both runners export OTLP/HTTP (JSON) to a receiver in
 * this process; a call made on runner A with a `traceparent` whose profile's shard is owned by
 * runner B yields one trace holding A's HTTP server span and B's entity and SQL spans.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schedule, Tracer } from "effect"
import { randomBytes, randomUUID } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { makeServiceClient } from "../../src/rpc/client.ts"
import { createTestDatabase, type TestDatabase } from "./support/database.ts"
import { type RunnerProcess, startRunner, stopRunner } from "./support/processes.ts"

const adminUrl = process.env["DATABASE_URL"] ?? ""
const TOKEN = `tracing-${randomBytes(12).toString("hex")}`

interface ReceivedSpan {
  readonly runner: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string
  readonly name: string
  readonly kind: number
  readonly attributes: Record<string, unknown>
}

// OTLP span kinds.
const SERVER = 2

type KeyValue = { readonly key: string; readonly value: Record<string, unknown> }
const attributesOf = (list: ReadonlyArray<KeyValue> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map(({ key, value }) => [key, Object.values(value)[0]]))

/** The OTLP/HTTP JSON receiver: every span of every export, with the runner named by `service.instance.id`. */
const startReceiver = () =>
  new Promise<{ readonly server: Server; readonly url: string; readonly spans: Array<ReceivedSpan> }>((resolve) => {
    const spans: Array<ReceivedSpan> = []
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        if (request.url === "/v1/traces") {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
            resourceSpans?: ReadonlyArray<{
              resource?: { attributes?: ReadonlyArray<KeyValue> }
              scopeSpans?: ReadonlyArray<{ spans?: ReadonlyArray<Omit<ReceivedSpan, "runner" | "attributes"> & { attributes?: ReadonlyArray<KeyValue> }> }>
            }>
          }
          for (const resourceSpans of body.resourceSpans ?? []) {
            const runner = String(attributesOf(resourceSpans.resource?.attributes)["service.instance.id"] ?? "?")
            for (const scope of resourceSpans.scopeSpans ?? []) {
              for (const span of scope.spans ?? []) {
                spans.push({ ...span, parentSpanId: span.parentSpanId ?? "", runner, attributes: attributesOf(span.attributes) })
              }
            }
          }
        }
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({ server, url: `http://127.0.0.1:${port}`, spans })
    })
  })

const runners: Array<RunnerProcess> = []
let database: TestDatabase | undefined
let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined

const cleanUp = async () => {
  await Promise.all(runners.map((runner) => stopRunner(runner)))
  await database?.drop()
  await new Promise((resolve) => receiver === undefined ? resolve(undefined) : receiver.server.close(resolve))
}

const fail = (message: string) => Effect.die(new Error(`${message}\n${runners.map((r) => r.tail()).join("\n")}`))

const waitFor = <A>(description: string, within: Duration.Input, check: Effect.Effect<A | undefined, unknown>) =>
  check.pipe(
    Effect.timeout("5 seconds"),
    Effect.catchCause(() => Effect.succeed(undefined)),
    Effect.flatMap((value) => value === undefined ? Effect.fail("not yet" as const) : Effect.succeed(value)),
    Effect.retry(Schedule.spaced("200 millis")),
    Effect.timeoutOrElse({ duration: within, orElse: () => fail(`timed out waiting for ${description}`) })
  )

describe.skipIf(adminUrl === "")(
  adminUrl === "" ? "one trace across two runners (skipped: DATABASE_URL is not set)" : "one trace across two runners",
  () => {
    it.live("a traced call on runner A continues into the entity and its SQL on runner B", () =>
      Effect.gen(function*() {
        yield* Effect.addFinalizer(() => Effect.promise(cleanUp))
        receiver = yield* Effect.promise(startReceiver)
        const spans = receiver.spans
        database = yield* Effect.promise(() => createTestDatabase(adminUrl))
        const env = (name: string) => ({
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver?.url ?? "",
          OTEL_RESOURCE_ATTRIBUTES: `service.instance.id=${name}`,
          // Export within a fraction of a second rather than the SDK's 5 s.
          OTEL_BSP_SCHEDULE_DELAY: "100",
          LOG_LEVEL: "Warn"
        })
        const a = yield* Effect.promise(() => startRunner({ name: "A", databaseUrl: database!.url, token: TOKEN, env: env("A") }))
        runners.push(a)
        const clientA = yield* makeServiceClient({ url: a.rpcUrl, credential: TOKEN })
        yield* waitFor("runner A to own every shard", "30 seconds", Effect.map(clientA.ServiceStatus(), (s) =>
          s.cluster.shards.owned_by_this_runner === s.cluster.shards.total ? s : undefined))
        const b = yield* Effect.promise(() => startRunner({ name: "B", databaseUrl: database!.url, token: TOKEN, env: env("B") }))
        runners.push(b)
        const clientB = yield* makeServiceClient({ url: b.rpcUrl, credential: TOKEN })
        yield* waitFor("runner B to own shards", "30 seconds", Effect.map(clientB.ServiceStatus(), (s) =>
          s.cluster.shards.owned_by_this_runner > 0 ? s : undefined))

        // Each call under its own remote parent (as a caller's `traceparent`): one of a few
        // profiles lands on B's shards (all on A: odds about 1 in 1000).
        const traceIds: Array<string> = []
        for (let i = 0; i < 10; i++) {
          const parent = Tracer.externalSpan({ traceId: randomBytes(16).toString("hex"), spanId: randomBytes(8).toString("hex"), sampled: true })
          traceIds.push(parent.traceId)
          const state = yield* clientA.ProfileBumpRevocationEpoch({ profile_id: randomUUID() }).pipe(Effect.withParentSpan(parent))
          expect(state.revocation_epoch).toBe(1)
        }

        const crossing = yield* waitFor("a trace with spans of both runners", "15 seconds", Effect.sync(() =>
          traceIds.find((traceId) =>
            spans.some((span) => span.traceId === traceId && span.runner === "A" && span.kind === SERVER && span.name === "POST /rpc") &&
            spans.some((span) => span.traceId === traceId && span.runner === "B" && span.attributes["db.system.name"] === "postgresql")
          )))
        // Each runner exports its spans in batches as they end, so the entity's own span on B can
        // arrive a batch after its SQL span: wait (with a deadline) for the spans checked below,
        // then check them on whatever arrived, so a missing one fails with the trace printed.
        const traceOf = () => spans.filter((span) => span.traceId === crossing)
        const onBOf = (trace: ReadonlyArray<ReceivedSpan>) => trace.filter((span) => span.runner === "B")
        const complete = (trace: ReadonlyArray<ReceivedSpan>) => {
          const onA = new Set(trace.filter((span) => span.runner === "A").map((span) => span.spanId))
          const onB = onBOf(trace)
          return onB.some((span) => span.name.startsWith("Profile.")) &&
            onB.some((span) => String(span.attributes["db.query.text"] ?? "").includes("profile_state")) &&
            onB.some((span) => onA.has(span.parentSpanId))
        }
        yield* Effect.sync(traceOf).pipe(
          Effect.repeat({ until: complete, schedule: Schedule.spaced("200 millis") }),
          Effect.timeoutOption("10 seconds")
        )
        const trace = traceOf()
        const serverSpan = trace.find((span) => span.runner === "A" && span.kind === SERVER && span.name === "POST /rpc")!
        expect(serverSpan.attributes["http.route"]).toBe("/rpc")
        expect(serverSpan.attributes["http.request.method"]).toBe("POST")
        expect(serverSpan.attributes["http.response.status_code"]).toBe(200)
        // On B: the entity's behaviour, and the profile_state upsert beneath it, in the same trace.
        const onB = onBOf(trace)
        const listing = trace.map((span) => `${span.runner} ${span.name} <- ${span.parentSpanId}`).join("\n")
        expect(onB.some((span) => span.name.startsWith("Profile.")), listing).toBe(true)
        const upsert = onB.find((span) => String(span.attributes["db.query.text"] ?? "").includes("profile_state"))
        expect(upsert, listing).toBeDefined()
        // The entity's span on B is the child of a span A exported: the trace did not restart on B.
        const onA = new Set(trace.filter((span) => span.runner === "A").map((span) => span.spanId))
        expect(onB.some((span) => onA.has(span.parentSpanId)), listing).toBe(true)
      }), { timeout: 120_000 })
  }
)
