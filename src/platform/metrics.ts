/**
 * Metrics (decision 0084): Effect metrics in the process-wide registry, exported over OTLP
 * when an endpoint is configured and rendered in Prometheus text format at `GET /metrics`
 * (operator credential). Names follow the OpenTelemetry semantic conventions where one exists
 * (`http.server.request.duration`, `db.client.operation.duration`...), `svc.*` otherwise;
 * Prometheus sees dots as underscores. docs/runbook.md says what each one means.
 */
import { Effect, Metric } from "effect"

// Seconds, as the semantic conventions ask: 5 ms to 10 s.
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]

export const httpServerDuration = Metric.histogram("http.server.request.duration", {
  description: "Duration of HTTP server requests, in seconds, by method, route and status",
  boundaries: SECONDS
})

export const rpcServerDuration = Metric.histogram("rpc.server.call.duration", {
  description: "Duration of RPC calls served, in seconds, by service, method and outcome",
  boundaries: SECONDS
})

export const providerCallDuration = Metric.histogram("http.client.request.duration", {
  description: "Duration of provider calls (all attempts), in seconds, by provider, operation and outcome",
  boundaries: SECONDS
})

export const providerThrottles = Metric.counter("svc.provider.throttles", {
  description: "Provider answers of 429 (after retries), by provider and operation",
  incremental: true
})

export const rateLimitRejections = Metric.counter("svc.rate_limit.rejections", {
  description: "Requests this service answered 429 (rate limits, sign-in throttles), by route",
  incremental: true
})

export const recorderBatchSize = Metric.histogram("svc.recorder.batch.size", {
  description: "Outcome events committed together by the group-commit recorder",
  boundaries: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
})

export const recorderCommitDuration = Metric.histogram("svc.recorder.commit.duration", {
  description: "Duration of one group commit of the outcome recorder, in seconds",
  boundaries: SECONDS
})

export const requestLogDropped = Metric.counter("svc.request_log.dropped", {
  description: "Request log entries dropped unwritten: the buffer was full while the database did not take them",
  incremental: true
})

export const partitionsCreated = Metric.counter("svc.partitions.created", {
  description: "Monthly partitions the partition maintenance created ahead (decision 0133), by table",
  incremental: true
})

export const partitionsDropped = Metric.counter("svc.partitions.dropped", {
  description: "Partitions the partition maintenance dropped past their table's retention (decision 0133), by table",
  incremental: true
})

export const queueDepth = Metric.gauge("svc.queue.depth", {
  description: "Rows waiting in a durable queue, by queue (outbox, replays, sync_jobs)"
})

export const queueLag = Metric.gauge("svc.queue.lag", {
  description: "Age in seconds of the oldest row waiting in a durable queue, by queue"
})

export const rollupLag = Metric.gauge("svc.rollup.lag", {
  description: "Seconds between the newest fact and what the analytics rollups have folded in"
})

export const dbConnectionCount = Metric.gauge("db.client.connection.count", {
  description: "Sessions of this service open on PostgreSQL, by db.client.connection.state (idle | used), from pg_stat_activity"
})

/** Observes `seconds` on `histogram` with `attributes` (one series per distinct set). */
export const observe = (
  histogram: Metric.Metric<number, unknown>,
  seconds: number,
  attributes: Readonly<Record<string, string>>
): Effect.Effect<void> => Metric.update(Metric.withAttributes(histogram, attributes), seconds)

/** Runs `effect` and observes its duration in seconds on `histogram`, with attributes from its outcome. */
export const timed = (
  histogram: Metric.Metric<number, unknown>,
  attributes: (exit: { readonly ok: boolean }) => Readonly<Record<string, string>>
) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const started = performance.now()
    return Effect.onExit(effect, (exit) =>
      observe(histogram, (performance.now() - started) / 1000, attributes({ ok: exit._tag === "Success" })))
  })

/** Wraps one RPC call (in the server's per-call middleware) to observe its duration by service, method and outcome. */
export const timedRpcCall = (service: string, method: string) =>
  timed(rpcServerDuration, ({ ok }) => ({ "rpc.system": "effect_rpc", "rpc.service": service, "rpc.method": method, "svc.outcome": ok ? "ok" : "error" }))

// Statements take from well under a millisecond to seconds: finer at the low end than SECONDS.
const DB_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

const DB_OPERATION_DURATION = {
  name: "db.client.operation.duration",
  description: "Duration of database statements, in seconds, from the statement's start (waiting for a connection included) to its result, by db.system.name, db.operation.name and error.type (decision 0101)"
}

/** The family itself, for its declaration in the scrape; its series are `dbOperationDurationSeries`. */
const dbOperationDuration = Metric.histogram(DB_OPERATION_DURATION.name, {
  description: DB_OPERATION_DURATION.description,
  boundaries: DB_SECONDS
})

/**
 * One series of `db.client.operation.duration`, its attributes fixed: updated per statement, so
 * the series key is computed once (`withAttributes` computes it again on every update).
 */
export const dbOperationDurationSeries = (attributes: Readonly<Record<string, string>>) =>
  Metric.histogram(DB_OPERATION_DURATION.name, { description: DB_OPERATION_DURATION.description, boundaries: DB_SECONDS, attributes })

export const dbPendingRequests = Metric.gauge("db.client.connection.pending_requests", {
  description: "Statements of this process waiting for a pooled connection, and transactions waiting for theirs (decision 0101)",
  attributes: { "db.system.name": "postgresql" }
})

// ---- The scrape (GET /metrics): every family from start-up, each with HELP and TYPE. ----

/** A metric family as Prometheus sees it. */
export interface MetricFamily {
  readonly name: string
  readonly type: "counter" | "gauge" | "histogram"
  readonly help: string
}

/** The Prometheus name of a metric id, as `PrometheusMetrics` writes it (dots and other characters as `_`). */
export const prometheusName = (id: string): string =>
  id.replace(/[^a-zA-Z0-9_:]/g, "_").replace(/^([0-9:])/, "_$1").replace(/_+/g, "_").replace(/_$/, "")

const familyOf = (metric: { readonly id: string; readonly type: Metric.Metric.Type; readonly description: string | undefined }): MetricFamily => ({
  name: prometheusName(metric.id),
  type: metric.type === "Histogram" ? "histogram" : metric.type === "Gauge" ? "gauge" : "counter",
  help: metric.description ?? metric.id
})

/** The families this service reports (this module's metrics). */
const serviceFamilies: ReadonlyArray<MetricFamily> = [
  httpServerDuration,
  rpcServerDuration,
  providerCallDuration,
  providerThrottles,
  rateLimitRejections,
  recorderBatchSize,
  recorderCommitDuration,
  requestLogDropped,
  partitionsCreated,
  partitionsDropped,
  queueDepth,
  queueLag,
  rollupLag,
  dbConnectionCount,
  dbOperationDuration,
  dbPendingRequests
].map(familyOf)

/**
 * The cluster's gauges (effect/cluster `ClusterMetrics`) carry no description: their HELP here.
 * Each runner reports its own view. The per-entity `effect_cluster_entity_mailbox_size` is off
 * (one series per resident entity); `_max` per entity type is always on.
 */
const clusterFamilies: ReadonlyArray<MetricFamily> = [
  { name: "effect_cluster_shards", type: "gauge", help: "Shards this runner owns" },
  { name: "effect_cluster_shards_releasing", type: "gauge", help: "Shards this runner is releasing to another runner" },
  { name: "effect_cluster_runners", type: "gauge", help: "Runners this runner knows of" },
  { name: "effect_cluster_runners_healthy", type: "gauge", help: "Runners this runner knows of that answer its health checks" },
  { name: "effect_cluster_entities", type: "gauge", help: "Entities resident on this runner, by entity type" },
  {
    name: "effect_cluster_entity_mailbox_size_max",
    type: "gauge",
    help: "Largest mailbox (messages waiting) among the resident entities of each type on this runner, by type"
  },
  { name: "effect_cluster_singletons", type: "gauge", help: "Cluster singletons running on this runner" },
  // A timer with the library's own description; its series come with the first shard released.
  { name: "effect_cluster_shard_release", type: "histogram", help: "Time taken to release a shard, including entity teardown, retries and lock storage recovery" }
]

/**
 * The backlog of each webhook subscription and export destination (decision 0120), read from the
 * database at each scrape rather than kept in the registry: only the `BACKLOG_LEADERS` whose
 * oldest waiting item is oldest are shown, so the label set stays bounded and a subscription that
 * drained leaves the scrape instead of staying as a stale series. The totals are `svc_queue_*`.
 */
export const BACKLOG_LEADERS = 10

const backlogFamilies: ReadonlyArray<MetricFamily> = [
  { name: "svc_webhook_backlog_pending", type: "gauge", help: "Deliveries waiting, by svc_subscription (the 10 whose oldest waited longest; counted up to 10000)" },
  { name: "svc_webhook_backlog_oldest_age", type: "gauge", help: "Seconds the oldest waiting delivery has waited, by svc_subscription (the same 10)" },
  { name: "svc_webhook_delivered_last_minute", type: "gauge", help: "Deliveries that succeeded in the last 60 seconds, by svc_subscription (the same 10)" },
  { name: "svc_export_backlog_pending", type: "gauge", help: "Exports waiting (pending or held), by svc_destination (the 10 whose oldest waited longest; counted up to 10000)" },
  { name: "svc_export_backlog_oldest_age", type: "gauge", help: "Seconds the oldest waiting export has waited, by svc_destination (the same 10)" },
  { name: "svc_export_delivered_last_minute", type: "gauge", help: "Exports the ad platform took in the last 60 seconds, by svc_destination (the same 10)" }
]

/** One queue's backlog as the scrape shows it. */
export interface BacklogSample {
  readonly id: string
  readonly backlog: {
    readonly pending: number
    readonly oldest_pending_age_seconds: number | null
    readonly delivered_last_minute: number
  }
}

/** The backlog families' TYPE lines and samples, to go before `completeExposition` (which adds their HELP). */
export const backlogExposition = (
  subscriptions: ReadonlyArray<BacklogSample>,
  destinations: ReadonlyArray<BacklogSample>
): string => {
  const lines: Array<string> = []
  const family = (prefix: string, label: string, rows: ReadonlyArray<BacklogSample>) => {
    const series: ReadonlyArray<readonly [string, (row: BacklogSample) => number]> = [
      [`${prefix}_backlog_pending`, (row) => row.backlog.pending],
      [`${prefix}_backlog_oldest_age`, (row) => row.backlog.oldest_pending_age_seconds ?? 0],
      [`${prefix}_delivered_last_minute`, (row) => row.backlog.delivered_last_minute]
    ]
    for (const [name, value] of series) {
      if (rows.length === 0) continue
      lines.push(`# TYPE ${name} gauge`)
      for (const row of rows) lines.push(`${name}{${label}="${row.id}"} ${value(row)}`)
    }
  }
  family("svc_webhook", "svc_subscription", subscriptions)
  family("svc_export", "svc_destination", destinations)
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`
}

/** Every family the scrape declares from start-up, before any traffic. */
export const exportedFamilies: ReadonlyArray<MetricFamily> = [...serviceFamilies, ...backlogFamilies, ...clusterFamilies]

/**
 * Completes `PrometheusMetrics.format()` output: a HELP line for every family that has none (the
 * library's cluster gauges have no description), and HELP and TYPE for every known family that has
 * no series yet (a histogram by route before the first request), so a scraper sees each from start-up.
 */
export const completeExposition = (text: string, families: ReadonlyArray<MetricFamily> = exportedFamilies): string => {
  const known = new Map(families.map((family) => [family.name, family]))
  const lines = text.split("\n").filter((line) => line !== "")
  const out: Array<string> = []
  const seen = new Set<string>()
  for (const line of lines) {
    const type = /^# TYPE (\S+) /.exec(line)
    if (type?.[1] !== undefined) {
      const name = type[1]
      seen.add(name)
      const help = known.get(name)?.help
      if (!out.at(-1)?.startsWith(`# HELP ${name} `) && help !== undefined) out.push(`# HELP ${name} ${escapeHelp(help)}`)
    }
    out.push(line)
  }
  for (const family of families) {
    if (!seen.has(family.name)) out.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`)
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`
}

/** HELP text escapes backslash and newline (the text format's rule). */
const escapeHelp = (text: string) => text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")
