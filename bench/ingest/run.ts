/**
 * Durable ingest throughput (`npm run bench:ingest`).
 *
 * `POST /api/v1/events` answers 200 only after its transaction committed (decision 0029: the
 * outcome event claimed ON CONFLICT on its key, the customer upserted and row-locked, the
 * conversion, the first-payment recompute, the `outcome.recorded` outbox row). This bench drives
 * it from N keep-alive connections on the PostgreSQL of `DATABASE_URL` (required; a fresh,
 * empty database is best, e.g. `createdb bench_ingest`: the tables grow by every run), next to
 * a bare `node:http` server in the same run that does the same durable write with the same
 * driver (`@effect/sql-pg`'s `PgClient`, the same pool size of 10) and answers 200 after COMMIT.
 *
 * Seeded by SQL: for each server its own profile created by a person (no connect-broker tier),
 * an API key with `events:write` and a per-minute allowance of 10^9, and a default conversion
 * definition listing `purchase` (counts as cash). Bodies: a unique `idempotency_key` each, a
 * value with decimals (a JSON number, so the service re-reads its literal), `currency`,
 * `user_traits.external_id` from a pool of BENCH_CUSTOMERS customers (so customer upserts
 * repeat), `action_source`, `occurred_at`, a click id.
 *
 * What the baseline does per request, in one transaction: INSERT the outcome event ON CONFLICT
 * (profile, key) DO NOTHING RETURNING (a repeat reads the stored event instead), INSERT the
 * customer ON CONFLICT DO NOTHING + SELECT it, UPDATE the event's customer, INSERT the
 * conversion, INSERT the outbox row; COMMIT; 200 with the same body shape. It skips what is
 * the service's own: authentication and the rate-limit bucket, body schema validation, the
 * request hash, the profile and definition reads, the customer row lock and the first-payment
 * recompute.
 *
 * A third server, `--bare-batched`, does the same write as the baseline with group commit: requests
 * that arrive together share one transaction of set-based statements (`unnest` arrays, up to 4
 * batches in flight), as the service does (decision 0036). It is not a goal's baseline: it shows
 * what this machine can do for this write at all. A fourth, `--effect-batched`, is the framework
 * floor: Effect's HttpApi (the stack the service must be built on) serving this route's contract
 * schemas with the same group-commit write and nothing else, so the gap from the batched baseline
 * to it is the framework's and the gap from it to the service is the product's. Each server runs alone (the one before it is
 * stopped), and each row shows the CPU per event of the server, of PostgreSQL (every `postgres`
 * process) and of this load generator, and how busy the machine was: where the CPU went.
 *
 * Goals: at least 5,000 events/s and at least 0.5x the baseline.
 *
 * Settings (env): BENCH_CONNECTIONS (64), BENCH_DURATION_S (10), BENCH_WARMUP_S (6: at least the
 * auth cache's lifetime), BENCH_CUSTOMERS (2000), BENCH_CPU_PROF (a directory: the service runs with
 * `--cpu-prof` and writes its profile there when it stops), BENCH_START_S (120: how long each server may take to start),
 * BENCH_WORKERS_APART (1: the service runs with `SVC_WORKERS=off` and a second service process, sent no
 * requests, works its queues on the same database, decision 0139; its CPU is printed after the service's run),
 * BENCH_PROCESSES (1: each server runs as this many processes, the service as that many cluster runners, and
 * the connections are spread over them as a Kubernetes Service spreads connections: what splitting one
 * machine's load over several processes costs each server, issue 35 part 6), BENCH_SERVERS (a comma list of
 * `service`, `bare`, `batched`, `floor`: only those runs, e.g. `service,batched` for paired runs of the service
 * against the group commit).
 */
import { PgClient } from "@effect/sql-pg"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer as createHttpServer } from "node:http"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { IngestedEvent, IngestEvent } from "../../schema/events.ts"
import { PAYLOAD_PARSE_OPTIONS } from "../../src/http/group-api.ts"
import { CredentialPrefix, displayPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { postgresOptions } from "../../src/platform/database.ts"
import {
  fmt,
  freePort,
  HOST,
  intFromEnv,
  load,
  type LoadRequest,
  percentile,
  processCpuMs,
  startProcess,
  stopProcess,
  useSecretsKey,
  waitFor
} from "../support.ts"

const EVENT_NAME = "purchase"
/** BENCH_SERVERS' names of the four runs, in order. */
const SERVER_NAMES = ["service", "bare", "batched", "floor"] as const
const POOL_SIZE = 10 // the service's (src/platform/database.ts)
const ACTION_SOURCES = ["website", "app", "phone_call", "physical_store", "chat"] as const

const pgLayer = (databaseUrl: string, maxConnections: number) =>
  PgClient.layer({
    ...postgresOptions(Redacted.make(databaseUrl)),
    maxConnections,
    minConnections: 0,
    applicationName: "bench-ingest",
    startupParameters: { timezone: "UTC" }
  })

// ---------------------------------------------------------------------------------------------
// Seeding.

interface Seeded {
  readonly profileId: string
  readonly key: string
}

const seed = (databaseUrl: string, label: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const workspaceId = crypto.randomUUID()
      const profileId = crypto.randomUUID()
      const key = mintSecret(CredentialPrefix.apiKey)
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, ${`bench ingest ${label}`})`
        yield* sql`INSERT INTO profiles (id, workspace_id, name, currency) VALUES (${profileId}, ${workspaceId}, ${`bench ${label}`}, 'USD')`
        yield* sql`
          INSERT INTO api_keys (id, profile_id, workspace_id, prefix, secret_hash, scopes, rate_limit_per_minute)
          VALUES (${crypto.randomUUID()}, ${profileId}, ${workspaceId}, ${displayPrefix(key, CredentialPrefix.apiKey)},
                  ${secretDigest(key)}, ${["events:write"]}, 1000000000)`
        yield* sql`
          INSERT INTO conversion_definitions (id, profile_id, conversion_key, name, kind, event_names, is_default, counts_as_cash)
          VALUES (${crypto.randomUUID()}, ${profileId}, 'purchase', 'Purchase', 'event', ${[EVENT_NAME]}, true, true)`
      }))
      return { profileId, key } satisfies Seeded
    }).pipe(Effect.provide(pgLayer(databaseUrl, 1)), Effect.scoped)
  )

interface Written {
  readonly events: number
  readonly conversions: number
  readonly outbox: number
  readonly customers: number
}

const written = (databaseUrl: string, profileId: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const rows = yield* sql<Written>`
        SELECT (SELECT count(*)::int FROM outcome_events WHERE profile_id = ${profileId}) AS events,
               (SELECT count(*)::int FROM conversions WHERE profile_id = ${profileId}) AS conversions,
               (SELECT count(*)::int FROM outbox WHERE profile_id = ${profileId}) AS outbox,
               (SELECT count(*)::int FROM customers WHERE profile_id = ${profileId}) AS customers`
      return rows[0]
    }).pipe(Effect.provide(pgLayer(databaseUrl, 1)), Effect.scoped)
  )

// ---------------------------------------------------------------------------------------------
// The bare server (child role): `node bench/ingest/run.ts --bare <port> <profileId>`, DATABASE_URL in env.

interface Body {
  readonly event_name?: unknown
  readonly idempotency_key?: unknown
  readonly occurred_at?: unknown
  readonly properties?: { readonly value?: unknown; readonly currency?: unknown }
  readonly user_traits?: { readonly external_id?: unknown }
  readonly action_source?: unknown
  readonly click_ids?: unknown
}

const str = (value: unknown): string | null => (typeof value === "string" ? value : null)

type IngestAnswer = { readonly outcome_event_id: string; readonly conversion_id: string | null }

/** A baseline server's database and the seeded definition of its profile. */
const bareDatabase = async (profileId: string, databaseUrl: string) => {
  const runtime = ManagedRuntime.make(Layer.orDie(pgLayer(databaseUrl, POOL_SIZE)))
  const definition = await runtime.runPromise(Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const rows = yield* sql<{ id: string; conversion_key: string; counts_as_cash: boolean; attribution_eligible: boolean }>`
      SELECT id, conversion_key, counts_as_cash, attribution_eligible FROM conversion_definitions
      WHERE profile_id = ${profileId} AND kind = 'event' AND ${EVENT_NAME} = ANY (event_names)`
    return rows[0]
  }))
  if (definition === undefined) throw new Error("no definition seeded for the baseline server's profile")
  return { runtime, definition }
}

/** The `outcome.recorded` payload the baselines write, shaped like the service's. */
const outboxPayload = (row: {
  readonly id: string
  readonly createdAt: string
  readonly profileId: string
  readonly eventId: string
  readonly eventName: string
  readonly occurredAt: string
  readonly externalId: string | null
  readonly amount: string | null
  readonly currency: string | null
  readonly conversionId: string | null
  readonly customerId: string | null
}) => ({
  id: row.id,
  type: "outcome.recorded",
  created_at: row.createdAt,
  data: {
    provider: "svc",
    outcome_type: row.eventName,
    occurred_at: row.occurredAt,
    customer_key: row.externalId,
    value: row.amount,
    currency: row.currency,
    outcome_event_id: row.eventId,
    conversion_id: row.conversionId
  },
  delivery: { profile_id: row.profileId, provisioned_by_app_id: null, healthcare_family: false, customer_id: row.customerId }
})

/**
 * A baseline's `node:http` server: `/healthz`, and `POST /api/v1/events` whose parsed body goes to
 * `accept`, which replies with the answer (200) or undefined (503). Ends on SIGTERM or when the
 * parent goes away.
 */
const serveBare = (
  port: number,
  runtime: { readonly dispose: () => Promise<void> },
  accept: (body: Body, reply: (data: IngestAnswer | undefined) => void) => void
) => {
  const answer = (response: import("node:http").ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body)
    response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
    response.end(text)
  }
  const server = createHttpServer((request, response) => {
    if (request.method === "GET" && request.url === "/healthz") return answer(response, 200, { status: "ok" })
    if (request.method !== "POST" || request.url !== "/api/v1/events") return answer(response, 404, { error: { code: "not_found" } })
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      let body: Body
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Body
      } catch {
        return answer(response, 400, { error: { code: "invalid_request" } })
      }
      accept(body, (data) =>
        data === undefined ? answer(response, 503, { error: { code: "database_unavailable" } }) : answer(response, 200, { data }))
    })
  })
  server.keepAliveTimeout = 60_000
  server.listen(port, HOST)
  const stop = () => server.close(() => void runtime.dispose().then(() => process.exit(0)))
  process.on("SIGTERM", stop)
  // The parent going away ends this process too.
  process.stdin.resume()
  process.stdin.on("end", () => process.exit(0))
}

const runBareServer = async (port: number, profileId: string, databaseUrl: string) => {
  const { definition, runtime } = await bareDatabase(profileId, databaseUrl)

  const ingest = (body: Body) =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const eventName = str(body.event_name) ?? "unknown"
      const key = str(body.idempotency_key) ?? crypto.randomUUID()
      const value = body.properties?.value
      const amount = typeof value === "number" || typeof value === "string" ? String(value) : null
      const currency = str(body.properties?.currency) ?? (amount === null ? null : "USD")
      const externalId = str(body.user_traits?.external_id)
      const occurredAt = str(body.occurred_at) ?? new Date().toISOString()
      const eventId = crypto.randomUUID()
      return yield* sql.withTransaction(Effect.gen(function*() {
        // The key claimed in the statement that inserts the event, as the service does (decision 0146).
        const claimed = yield* sql<{ id: string }>`
          WITH keyed AS (
            INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at)
            VALUES (${profileId}, ${key}, ${eventId}, ${occurredAt}::timestamptz)
            ON CONFLICT DO NOTHING RETURNING outcome_event_id)
          INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, source, event_name, occurred_at,
                                      value_amount, currency, action_source, click_ids)
          SELECT ${eventId}, ${profileId}, ${key}, 'bare', 'api', ${eventName}, ${occurredAt}::timestamptz,
                 ${amount}::numeric(20, 6), ${currency}, ${str(body.action_source)}, ${JSON.stringify(body.click_ids ?? {})}::jsonb
          FROM keyed
          RETURNING id`
        if (claimed.length === 0) {
          const stored = yield* sql<{ id: string; conversion_id: string | null }>`
            SELECT k.outcome_event_id AS id, c.id AS conversion_id FROM outcome_keys k
            LEFT JOIN conversions c ON c.outcome_event_id = k.outcome_event_id AND c.profile_id = k.profile_id AND c.occurred_at = k.occurred_at
            WHERE k.profile_id = ${profileId} AND k.idempotency_key = ${key}`
          return { outcome_event_id: stored[0]?.id ?? eventId, conversion_id: stored[0]?.conversion_id ?? null }
        }
        let customerId: string | null = null
        if (externalId !== null) {
          yield* sql`
            INSERT INTO customers (id, profile_id, customer_key) VALUES (${crypto.randomUUID()}, ${profileId}, ${externalId})
            ON CONFLICT (profile_id, customer_key) WHERE customer_key IS NOT NULL AND merged_into_id IS NULL AND erased_at IS NULL
            DO NOTHING`
          const found = yield* sql<{ id: string }>`
            SELECT id FROM customers
            WHERE profile_id = ${profileId} AND customer_key = ${externalId} AND merged_into_id IS NULL AND erased_at IS NULL`
          customerId = found[0]?.id ?? null
          if (customerId !== null) {
            yield* sql`
              UPDATE outcome_events SET customer_id = ${customerId}
              WHERE id = ${eventId} AND profile_id = ${profileId} AND occurred_at = ${occurredAt}::timestamptz`
          }
        }
        const conversionId = eventName === EVENT_NAME ? crypto.randomUUID() : null
        if (conversionId !== null) {
          yield* sql`
            INSERT INTO conversions (id, profile_id, outcome_event_id, definition_id, conversion_key, occurred_at,
                                     value_amount, currency, customer_id, counts_as_cash, attribution_eligible, is_first_payment)
            VALUES (${conversionId}, ${profileId}, ${eventId}, ${definition.id}, ${definition.conversion_key},
                    ${occurredAt}::timestamptz, ${amount}::numeric(20, 6), ${currency}, ${customerId},
                    ${definition.counts_as_cash}, ${definition.attribution_eligible}, ${customerId === null ? true : null})`
        }
        const outboxId = crypto.randomUUID()
        const payload = outboxPayload({
          id: outboxId,
          createdAt: new Date().toISOString(),
          profileId,
          eventId,
          eventName,
          occurredAt,
          externalId,
          amount,
          currency,
          conversionId,
          customerId
        })
        yield* sql`
          INSERT INTO outbox (id, profile_id, topic, payload)
          VALUES (${outboxId}, ${profileId}, 'outcome.recorded', ${JSON.stringify(payload)}::jsonb)`
        return { outcome_event_id: eventId, conversion_id: conversionId }
      }))
    })

  serveBare(port, runtime, (body, reply) => void runtime.runPromise(ingest(body)).then(reply, () => reply(undefined)))
}

// ---------------------------------------------------------------------------------------------
// The batched bare server (child role): `node bench/ingest/run.ts --bare-batched <port> <profileId>`.
// The same write as the bare server, but concurrent requests share one transaction of set-based
// statements (group commit), as the service does: what this machine can do for this write at all.

interface Pending {
  readonly body: Body
  readonly eventId: string
  readonly key: string
  readonly done: (result: IngestAnswer | undefined) => void
}

const MAX_BATCHES_IN_FLIGHT = 4
const MAX_BATCH = 500

/**
 * The group-commit write of the batched baselines: `accept` queues one parsed body and replies
 * with its answer once its batch committed (undefined when the batch failed).
 */
const batchedWriter = async (profileId: string, databaseUrl: string) => {
  const { definition, runtime } = await bareDatabase(profileId, databaseUrl)

  const ingestBatch = (batch: ReadonlyArray<Pending>) =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const now = new Date().toISOString()
      const events = batch.map((p) => {
        const value = p.body.properties?.value
        const amount = typeof value === "number" || typeof value === "string" ? String(value) : null
        return {
          ...p,
          eventName: str(p.body.event_name) ?? "unknown",
          amount,
          currency: str(p.body.properties?.currency) ?? (amount === null ? null : "USD"),
          externalId: str(p.body.user_traits?.external_id),
          occurredAt: str(p.body.occurred_at) ?? now
        }
      })
      return yield* sql.withTransaction(Effect.gen(function*() {
        const claimed = yield* sql<{ id: string }>`
          WITH v AS (
            SELECT * FROM unnest(${events.map((e) => e.eventId)}::uuid[], ${events.map((e) => e.key)}::text[],
                        ${events.map((e) => e.eventName)}::text[], ${events.map((e) => e.occurredAt)}::timestamptz[],
                        ${events.map((e) => e.amount)}::numeric(20, 6)[], ${events.map((e) => e.currency)}::text[],
                        ${events.map((e) => str(e.body.action_source))}::text[],
                        ${events.map((e) => JSON.stringify(e.body.click_ids ?? {}))}::jsonb[])
              WITH ORDINALITY AS v(id, key, name, at, amount, currency, action_source, click_ids, n)),
          keyed AS (
            INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at)
            SELECT ${profileId}, v.key, v.id, v.at FROM v ORDER BY v.n
            ON CONFLICT DO NOTHING RETURNING outcome_event_id)
          INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, source, event_name, occurred_at,
                                      value_amount, currency, action_source, click_ids)
          SELECT v.id, ${profileId}, v.key, 'bare', 'api', v.name, v.at, v.amount, v.currency, v.action_source, v.click_ids
          FROM v WHERE v.id IN (SELECT outcome_event_id FROM keyed)
          RETURNING id`
        const fresh = new Set(claimed.map((row) => row.id))
        const stored = new Map<string, { id: string; conversion_id: string | null }>()
        const repeats = events.filter((e) => !fresh.has(e.eventId)).map((e) => e.key)
        if (repeats.length > 0) {
          const rows = yield* sql<{ key: string; id: string; conversion_id: string | null }>`
            SELECT k.idempotency_key AS key, k.outcome_event_id AS id, c.id AS conversion_id
            FROM outcome_keys k
            LEFT JOIN conversions c ON c.outcome_event_id = k.outcome_event_id AND c.profile_id = k.profile_id AND c.occurred_at = k.occurred_at
            WHERE k.profile_id = ${profileId} AND k.idempotency_key = ANY(${repeats}::text[])`
          for (const row of rows) stored.set(row.key, row)
        }
        const created = events.filter((e) => fresh.has(e.eventId))
        // Sorted, so that concurrent batches take the customers' index entries in one order.
        const externalIds = [...new Set(created.flatMap((e) => (e.externalId === null ? [] : [e.externalId])))].sort()
        const customerOf = new Map<string, string>()
        if (externalIds.length > 0) {
          yield* sql`
            INSERT INTO customers (id, profile_id, customer_key)
            SELECT gen_random_uuid(), ${profileId}, k FROM unnest(${externalIds}::text[]) AS k
            ON CONFLICT (profile_id, customer_key) WHERE customer_key IS NOT NULL AND merged_into_id IS NULL AND erased_at IS NULL
            DO NOTHING`
          const rows = yield* sql<{ id: string; customer_key: string }>`
            SELECT id, customer_key FROM customers
            WHERE profile_id = ${profileId} AND customer_key = ANY(${externalIds}::text[]) AND merged_into_id IS NULL AND erased_at IS NULL`
          for (const row of rows) customerOf.set(row.customer_key, row.id)
          const linked = created.filter((e) => e.externalId !== null && customerOf.has(e.externalId))
          if (linked.length > 0) {
            // By the whole key, as the service writes it (decision 0137): by id alone, a plan without
            // statistics scans every outcome, and the baseline paid that where the service does not.
            yield* sql`
              UPDATE outcome_events o SET customer_id = v.customer_id
              FROM unnest(${linked.map((e) => e.eventId)}::uuid[], ${linked.map((e) => customerOf.get(e.externalId ?? "") ?? null)}::uuid[])
                AS v(id, customer_id)
              WHERE o.id = v.id AND o.profile_id = ${profileId}`
          }
        }
        const results = new Map<string, { outcome_event_id: string; conversion_id: string | null }>()
        const conversions = created.filter((e) => e.eventName === EVENT_NAME).map((e) => ({
          ...e,
          conversionId: crypto.randomUUID(),
          customerId: e.externalId === null ? null : customerOf.get(e.externalId) ?? null
        }))
        if (conversions.length > 0) {
          yield* sql`
            INSERT INTO conversions (id, profile_id, outcome_event_id, definition_id, conversion_key, occurred_at,
                                     value_amount, currency, customer_id, counts_as_cash, attribution_eligible, is_first_payment)
            SELECT v.id, ${profileId}, v.event_id, ${definition.id}, ${definition.conversion_key}, v.at, v.amount, v.currency,
                   v.customer_id, ${definition.counts_as_cash}, ${definition.attribution_eligible},
                   CASE WHEN v.customer_id IS NULL THEN true END
            FROM unnest(${conversions.map((c) => c.conversionId)}::uuid[], ${conversions.map((c) => c.eventId)}::uuid[],
                        ${conversions.map((c) => c.occurredAt)}::timestamptz[], ${conversions.map((c) => c.amount)}::numeric(20, 6)[],
                        ${conversions.map((c) => c.currency)}::text[], ${conversions.map((c) => c.customerId)}::uuid[])
              AS v(id, event_id, at, amount, currency, customer_id)`
        }
        for (const e of created) results.set(e.eventId, { outcome_event_id: e.eventId, conversion_id: null })
        for (const c of conversions) results.set(c.eventId, { outcome_event_id: c.eventId, conversion_id: c.conversionId })
        const outbox = created.map((e) => {
          const result = results.get(e.eventId)
          const outboxId = crypto.randomUUID()
          return {
            id: outboxId,
            payload: JSON.stringify(outboxPayload({
              id: outboxId,
              createdAt: now,
              profileId,
              eventId: e.eventId,
              eventName: e.eventName,
              occurredAt: e.occurredAt,
              externalId: e.externalId,
              amount: e.amount,
              currency: e.currency,
              conversionId: result?.conversion_id ?? null,
              customerId: e.externalId === null ? null : customerOf.get(e.externalId) ?? null
            }))
          }
        })
        if (outbox.length > 0) {
          yield* sql`
            INSERT INTO outbox (id, profile_id, topic, payload)
            SELECT v.id, ${profileId}, 'outcome.recorded', v.payload
            FROM unnest(${outbox.map((o) => o.id)}::uuid[], ${outbox.map((o) => o.payload)}::jsonb[]) AS v(id, payload)`
        }
        return events.map((e) => {
          const repeat = stored.get(e.key)
          return results.get(e.eventId) ??
            (repeat === undefined ? undefined : { outcome_event_id: repeat.id, conversion_id: repeat.conversion_id })
        })
      }))
    })

  const queue: Array<Pending> = []
  let inFlight = 0
  const flush = () => {
    while (inFlight < MAX_BATCHES_IN_FLIGHT && queue.length > 0) {
      const batch = queue.splice(0, MAX_BATCH)
      inFlight++
      runtime.runPromise(ingestBatch(batch)).then(
        (results) => batch.forEach((pending, i) => pending.done(results[i])),
        () => batch.forEach((pending) => pending.done(undefined))
      ).finally(() => {
        inFlight--
        flush()
      })
    }
  }

  const accept = (body: Body, reply: (data: IngestAnswer | undefined) => void) => {
    queue.push({ body, eventId: crypto.randomUUID(), key: str(body.idempotency_key) ?? crypto.randomUUID(), done: reply })
    // Requests that arrive in the same turn of the event loop join one batch.
    if (queue.length === 1) setImmediate(flush)
  }
  return { runtime, accept }
}

const runBareBatchedServer = async (port: number, profileId: string, databaseUrl: string) => {
  const { accept, runtime } = await batchedWriter(profileId, databaseUrl)
  serveBare(port, runtime, accept)
}

// ---------------------------------------------------------------------------------------------
// The framework floor (child role): `node bench/ingest/run.ts --effect-batched <port> <profileId>`.
// The stack the service is built on (the customer's card: Effect's HttpApi on @effect/platform-node)
// serving the service's own contract for this route (the `IngestEvent` body schema with the same
// parse options, the `IngestedEvent` answer), its handler handing the decoded body to the batched
// baseline's write above. No authentication, request log, envelope, tracing or background work:
// the gap between it and the batched baseline is the framework's per-request cost; the gap between
// the service and it is what the product adds.

const runEffectBatchedServer = async (port: number, profileId: string, databaseUrl: string) => {
  const { accept, runtime } = await batchedWriter(profileId, databaseUrl)
  const Floor = HttpApi.make("floor").add(
    HttpApiGroup.make("events").add(HttpApiEndpoint.post("ingestEvent", "/api/v1/events", { payload: IngestEvent, success: IngestedEvent }))
  ).annotate(HttpApi.PayloadParseOptions, PAYLOAD_PARSE_OPTIONS)
  const Events = HttpApiBuilder.group(Floor, "events", (handlers) =>
    handlers.handle("ingestEvent", ({ payload }) =>
      Effect.callback<IngestedEvent>((resume) =>
        accept(payload, (data) => resume(data === undefined ? Effect.die("the batch failed") : Effect.succeed({ data })))
      )))
  const App = Layer.mergeAll(
    HttpApiBuilder.layer(Floor).pipe(Layer.provide(Events)),
    HttpRouter.add("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" }))
  )
  const server = Layer.launch(
    HttpRouter.serve(App, { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provide(NodeHttpServer.layer(createHttpServer, { port, host: HOST }))
    )
  )
  // The parent going away, or SIGTERM, ends this process too.
  process.on("SIGTERM", () => void runtime.dispose().then(() => process.exit(0)))
  process.stdin.resume()
  process.stdin.on("end", () => process.exit(0))
  await Effect.runPromise(server)
}

// ---------------------------------------------------------------------------------------------
// The run.

/** Realistic bodies: unique key, decimal value (a JSON number), currency, a pooled external_id. */
const bodies = (runId: string, customers: number, key: string) => {
  const base = Date.now()
  const authorization = `Bearer ${key}`
  return (n: number): LoadRequest => ({
    method: "POST",
    headers: { authorization, "content-type": "application/json" },
    body: JSON.stringify({
      event_name: EVENT_NAME,
      idempotency_key: `${runId}-${n}`,
      occurred_at: new Date(base - (n % 86_400) * 1000).toISOString(),
      properties: { value: (n % 500) + 0.99, currency: n % 5 === 0 ? "EUR" : "USD" },
      user_traits: { external_id: `cust-${(n * 7919) % customers}` },
      action_source: ACTION_SOURCES[n % ACTION_SOURCES.length],
      click_ids: { gclid: `gclid-${n.toString(36)}` }
    })
  })
}

const perEvent = (cpuMs: number | undefined, events: number) => (cpuMs === undefined || events === 0 ? undefined : (cpuMs * 1000) / events)

interface Row {
  readonly key: (typeof SERVER_NAMES)[number]
  readonly server: string
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  readonly requests: number
  readonly cpuMicros: number | undefined
  /** PostgreSQL's and the load generator's CPU per event, and how busy the machine was. */
  readonly databaseMicros: number | undefined
  readonly clientMicros: number | undefined
  readonly machineBusy: number | undefined
  /** The server processes' user / system µs and context switches (involuntary / voluntary) per event. */
  readonly sched: string
  readonly written: Written | undefined
}

const main = async () => {
  const databaseUrl = process.env["DATABASE_URL"]
  if (databaseUrl === undefined) {
    console.log("bench:ingest needs DATABASE_URL (a PostgreSQL the bench may write to; a fresh, empty database is best); nothing measured")
    process.exitCode = 1
    return
  }
  const connections = intFromEnv("BENCH_CONNECTIONS", 64, 1000)
  const durationSeconds = intFromEnv("BENCH_DURATION_S", 10, 120)
  // At least the auth cache's lifetime (5 s), as in bench/auth.
  const warmupSeconds = Math.max(6, intFromEnv("BENCH_WARMUP_S", 6, 60))
  const customers = intFromEnv("BENCH_CUSTOMERS", 2000, 1_000_000)
  // How long a server may take to answer /healthz: on a 2-core machine shared by several engineers
  // (load average above 30) loading the service's modules alone took longer than 120 s.
  const startMillis = intFromEnv("BENCH_START_S", 120, 1800) * 1000
  const processes = intFromEnv("BENCH_PROCESSES", 1, 8)
  const ports = () => Promise.all(Array.from({ length: processes }, () => freePort()))
  const servicePorts = await ports()
  const barePorts = await ports()
  const batchedPorts = await ports()
  const floorPorts = await ports()
  const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-ingest-"))
  const env: Record<string, string | undefined> = { ...process.env, DATABASE_URL: databaseUrl, SVC_SECRETS_KEY: useSecretsKey(), REDIS_URL: undefined }
  const profileDir = process.env["BENCH_CPU_PROF"]
  // Decision 0139: the service answers with its queue workers off, a second process works them.
  const workersApart = process.env["BENCH_WORKERS_APART"] === "1"
  // BENCH_SERVERS picks some of the four runs (paired runs of one server against the group commit).
  const onlyServers = process.env.BENCH_SERVERS === undefined ? undefined : new Set(process.env.BENCH_SERVERS.split(",").map((name) => name.trim()))
  // Two processes on one database are two runners of one cluster (socket mode, each its own runner port).
  const runner = async () => workersApart || processes > 1 ? { SVC_CLUSTER_MODE: "socket", SVC_RUNNER_PORT: String(await freePort()) } : {}
  const started: Array<ReturnType<typeof startProcess>> = []
  const startService = async (port: number, index: number) => {
    const one = startProcess(
      [...(profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${resolve(profileDir)}`]), "src/main/node.ts"],
      {
        ...env,
        ...(await runner()),
        PORT: String(port),
        HOST,
        SVC_DATA_DIR: join(dataDir, `db-${index}`),
        LOG_LEVEL: "Warn",
        SVC_WORKERS: workersApart ? "off" : "on"
      },
      `service ${index}`
    )
    started.push(one)
    await waitFor(port, one.child, startMillis).catch((error: unknown) => {
      throw new Error(`service did not start: ${String(error)}\n${one.output()}`)
    })
    return one.child
  }
  /** A bench server (child role) as `processes` processes, each answering /healthz before the run. */
  const startServers = (role: keyof typeof childRoles, serverPorts: ReadonlyArray<number>, profileId: string) =>
    Promise.all(serverPorts.map(async (port) => {
      const one = startProcess(["bench/ingest/run.ts", role, String(port), profileId], env, role)
      started.push(one)
      await waitFor(port, one.child, startMillis).catch((error: unknown) => {
        throw new Error(`${role} server did not start: ${String(error)}\n${one.output()}`)
      })
      return one.child
    }))
  let workers: ReturnType<typeof startProcess> | undefined
  try {
    // The first runner migrates the database on start; the others start after it, then the seed.
    const first = await startService(servicePorts[0]!, 0)
    const serviceChildren = [first, ...await Promise.all(servicePorts.slice(1).map((port, i) => startService(port, i + 1)))]
    if (workersApart) {
      const workersPort = await freePort()
      workers = startProcess(
        ["src/main/node.ts"],
        { ...env, ...(await runner()), PORT: String(workersPort), HOST, SVC_DATA_DIR: join(dataDir, "workers"), LOG_LEVEL: "Warn", SVC_WORKERS: "on" },
        "workers"
      )
      const workersChild = workers
      await waitFor(workersPort, workers.child, startMillis).catch((error: unknown) => {
        throw new Error(`the workers' process did not start: ${String(error)}\n${workersChild.output()}`)
      })
    }
    const forService = await seed(databaseUrl, "service")
    const forBare = await seed(databaseUrl, "bare")
    const bareChildren = await startServers("--bare", barePorts, forBare.profileId)
    const forBatched = await seed(databaseUrl, "bare-batched")
    const batchedChildren = await startServers("--bare-batched", batchedPorts, forBatched.profileId)
    const forFloor = await seed(databaseUrl, "effect-batched")
    const floorChildren = await startServers("--effect-batched", floorPorts, forFloor.profileId)
    console.log(
      `node ${process.versions.node}; ${connections} connections, ${warmupSeconds} s warm-up + ${durationSeconds} s per run; ` +
        `${customers} customers; pool ${POOL_SIZE} connections each; ${processes} process(es) per server; 127.0.0.1 only`
    )
    const runId = Date.now().toString(36)
    const runs = [
      { server: "service POST /api/v1/events", ports: servicePorts, seeded: forService, children: serviceChildren },
      { server: "bare node:http + PgClient", ports: barePorts, seeded: forBare, children: bareChildren },
      { server: "bare node:http + PgClient, group commit", ports: batchedPorts, seeded: forBatched, children: batchedChildren },
      { server: "Effect HttpApi (the contract's schemas) + the same group commit", ports: floorPorts, seeded: forFloor, children: floorChildren }
    ]
    const rows: Array<Row> = []
    for (const [index, run] of runs.entries()) {
      const key = SERVER_NAMES[index]!
      if (onlyServers !== undefined && !onlyServers.has(key)) continue
      process.stdout.write(`  running ${run.server} ...`)
      const isService = run.children === serviceChildren
      const workersCpuBefore = isService ? processCpuMs(workers?.child.pid) : undefined
      const result = await load(
        run.ports,
        "/api/v1/events",
        200,
        connections,
        warmupSeconds,
        durationSeconds,
        {},
        run.children.flatMap((child) => child.pid === undefined ? [] : [child.pid]),
        bodies(`${runId}-${run.ports[0]}`, customers, run.seeded.key)
      )
      const rps = result.requests / result.seconds
      const workersCpuAfter = isService ? processCpuMs(workers?.child.pid) : undefined
      if (workersCpuBefore !== undefined && workersCpuAfter !== undefined && result.requests > 0) {
        // Over the whole load (warm-up included) per measured event: an upper bound of its share.
        console.log(` (the workers' process: ${fmt(((workersCpuAfter - workersCpuBefore) * 1000) / result.requests)} µs of CPU per measured event)`)
      }
      rows.push({
        key,
        server: run.server,
        rps,
        p50: percentile(result.latenciesMs, 0.5),
        p99: percentile(result.latenciesMs, 0.99),
        errors: result.errors,
        requests: result.requests,
        cpuMicros: perEvent(result.serverCpuMs, result.requests),
        databaseMicros: perEvent(result.databaseCpuMs, result.requests),
        clientMicros: perEvent(result.clientCpuMs, result.requests),
        machineBusy: result.machineBusy,
        sched: result.serverSched === undefined || result.requests === 0 ? "n/a" : [
          `${fmt((result.serverSched.userMs * 1000) / result.requests)} / ${fmt((result.serverSched.systemMs * 1000) / result.requests)} µs`,
          `${fmt(result.serverSched.involuntary / result.requests, 2)} / ${fmt(result.serverSched.voluntary / result.requests, 2)}`
        ].join(", "),
        written: await written(databaseUrl, run.seeded.profileId)
      })
      console.log(` ${fmt(rps)} events/s`)
      // Each server is stopped after its run: the service's background work (crediting, rollups)
      // would otherwise also run during the baselines' runs, on their rows.
      await Promise.all(run.children.map(stopProcess))
      if (isService && workers !== undefined) await stopProcess(workers.child)
    }
    console.log("")
    console.log(
      "| server | events/s | p50 ms | p99 ms | errors | CPU µs/event: server / PostgreSQL / load generator | server per event: user / system, switches involuntary / voluntary | machine busy | rows written (events / conversions / outbox / customers, incl. warm-up) |"
    )
    console.log("|---|---:|---:|---:|---:|---:|---|---:|---|")
    for (const row of rows) {
      const micros = (value: number | undefined) => (value === undefined ? "n/a" : fmt(value))
      const cpu = `${micros(row.cpuMicros)} / ${micros(row.databaseMicros)} / ${micros(row.clientMicros)}`
      const busy = row.machineBusy === undefined ? "n/a" : `${fmt(row.machineBusy * 100, 0)} %`
      const w = row.written === undefined ? "n/a" : `${row.written.events} / ${row.written.conversions} / ${row.written.outbox} / ${row.written.customers}`
      console.log(`| ${row.server} | ${fmt(row.rps)} | ${fmt(row.p50, 2)} | ${fmt(row.p99, 2)} | ${row.errors} | ${cpu} | ${row.sched} | ${busy} | ${w} |`)
    }
    const rowOf = (key: (typeof SERVER_NAMES)[number]) => rows.find((row) => row.key === key)
    const [svc, baseline, batchedBaseline, framework] = SERVER_NAMES.map(rowOf)
    let ok = rows.every((row) => row.errors === 0)
    for (const row of rows) {
      // Every acknowledged event is committed: at least as many rows as measured 200s.
      if (row.written !== undefined && (row.written.events < row.requests || row.written.outbox !== row.written.events)) {
        console.log(`${row.server}: fewer rows than acknowledged events (or outbox rows != events)`)
        ok = false
      }
    }
    if (svc !== undefined && batchedBaseline !== undefined && baseline === undefined) {
      console.log("")
      console.log(`service / bare with group commit: ${fmt(svc.rps / batchedBaseline.rps, 2)}x`)
    }
    if (svc !== undefined && baseline !== undefined) {
      const ratio = svc.rps / baseline.rps
      const absolute = svc.rps >= 5000
      const relative = ratio >= 0.5
      console.log("")
      console.log(`service / bare throughput: ${fmt(ratio, 2)}x (goal >= 0.50x: ${relative ? "met" : "NOT met"})`)
      console.log(`service throughput: ${fmt(svc.rps)} events/s (goal >= 5,000/s: ${absolute ? "met" : "NOT met"})`)
      if (batchedBaseline !== undefined) {
        console.log(`service / bare with group commit: ${fmt(svc.rps / batchedBaseline.rps, 2)}x (the same write batched: near what this machine can do)`)
      }
      if (batchedBaseline !== undefined && framework !== undefined) {
        console.log(
          `Effect HttpApi floor / bare with group commit: ${fmt(framework.rps / batchedBaseline.rps, 2)}x ` +
            `(the framework's per-request cost on the same write); service / floor: ${fmt(svc.rps / framework.rps, 2)}x (what the product adds)`
        )
      }
      if (svc.cpuMicros !== undefined && baseline.cpuMicros !== undefined) {
        console.log(`server CPU per event, service / bare: ${fmt(svc.cpuMicros / baseline.cpuMicros, 2)}x (less sensitive to other load on the machine)`)
      }
    }
    process.exitCode = ok ? 0 : 1
  } finally {
    await Promise.all([...started, ...(workers === undefined ? [] : [workers])].map((one) => stopProcess(one.child)))
    rmSync(dataDir, { recursive: true, force: true })
  }
}

const childRoles = { "--bare": runBareServer, "--bare-batched": runBareBatchedServer, "--effect-batched": runEffectBatchedServer } as const
const isChildRole = (arg: string | undefined): arg is keyof typeof childRoles => arg !== undefined && Object.hasOwn(childRoles, arg)

const role = process.argv[2]
if (isChildRole(role)) {
  const databaseUrl = process.env["DATABASE_URL"]
  if (databaseUrl === undefined) throw new Error("the bare server needs DATABASE_URL")
  const run = childRoles[role]
  await run(Number(process.argv[3]), process.argv[4] ?? "", databaseUrl)
} else {
  await main()
}
