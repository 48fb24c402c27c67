/**
 * Database client metrics (decision 0101): `db.client.operation.duration` and
 * `db.client.connection.pending_requests`, read off the spans the SQL client already opens for
 * every statement. A tracer wrapper sees each statement's span start, its `db.system.name`,
 * `db.query.text` and `db.client.connection.wait_time_ms` (set at the connection hand-off) and its
 * end; nothing in the driver or on the wire is touched.
 *
 * Span creation is switched off (`TracerEnabled` false) when nothing exports spans, and then no
 * tracer is ever called. So this tracer is always installed: without an exporter its spans are
 * placeholders exactly like the runtime's own (ids `noop`, `DisablePropagation`, nothing
 * recorded), except that a client span notes the few attributes above until it ends.
 */
import { Cause, Context, Effect, Exit, Option, Tracer } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { dbOperationDurationSeries, dbPendingRequests } from "./metrics.ts"

const SYSTEM = "db.system.name"
const QUERY = "db.query.text"
// Set by effect/sql on a statement's span when the connection is handed to it (only while span creation is on).
const HANDED_OFF = "db.client.connection.wait_time_ms"

const OPERATIONS = new Set([
  "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE",
  "CREATE", "ALTER", "DROP", "TRUNCATE", "LOCK", "COPY", "LISTEN", "UNLISTEN", "NOTIFY", "SET", "SHOW", "VACUUM", "ANALYZE"
])
const MAIN = new Set(["SELECT", "INSERT", "UPDATE", "DELETE", "MERGE"])
const FIRST_WORD = /^\s*(?:(?:\/\*[\s\S]*?\*\/|--[^\n]*\n)\s*)*\(?\s*([A-Za-z]+)/

/**
 * The statement's operation for `db.operation.name`: its first keyword, or for a `WITH` the
 * keyword of the statement after the common table expressions; `other` for anything else
 * (the attribute stays low-cardinality whatever the text).
 */
export const operationOf = (text: string): string => {
  const first = FIRST_WORD.exec(text)?.[1]?.toUpperCase()
  if (first === undefined) return "other"
  if (first === "WITH") return mainOfWith(text)
  return OPERATIONS.has(first) ? first : "other"
}

const withCache = new Map<string, string>()

/** The first DML keyword outside parentheses and quotes after `WITH` (remembered per text: statements are few and fixed). */
const mainOfWith = (text: string): string => {
  const cached = withCache.get(text)
  if (cached !== undefined) return cached
  let depth = 0
  let found = "other"
  const word = /[A-Za-z_]+/y
  for (let i = text.search(/with/i) + 4; i < text.length; i++) {
    const c = text[i]!
    if (c === "'" || c === "\"") {
      const close = text.indexOf(c, i + 1)
      if (close === -1) break
      i = close
    } else if (c === "(") depth++
    else if (c === ")") depth--
    else if (depth === 0 && /[A-Za-z]/.test(c) && (i === 0 || !/[\w$]/.test(text[i - 1]!))) {
      word.lastIndex = i
      const token = word.exec(text)?.[0]?.toUpperCase() ?? ""
      if (MAIN.has(token)) {
        found = token
        break
      }
      i += token.length - 1
    }
  }
  if (withCache.size >= 1000) withCache.clear()
  withCache.set(text, found)
  return found
}

/** `error.type` of a failed statement: the SQL error's reason (`ConnectionError`, `ConstraintError`...), else `_OTHER`. */
const errorTypeOf = (exit: Exit.Exit<unknown, unknown>): string | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  if (Cause.hasInterruptsOnly(exit.cause)) return "interrupted"
  const error = Option.getOrUndefined(Cause.findErrorOption(exit.cause))
  if (typeof error === "object" && error !== null && "reason" in error) {
    const reason: unknown = error.reason
    if (typeof reason === "object" && reason !== null && "_tag" in reason && typeof reason._tag === "string") return reason._tag
  }
  return "_OTHER"
}

// Statements waiting for a pooled connection, across every client in the process.
let pending = 0

/** What one client span has shown of itself so far. */
class StatementProbe {
  private system: string | undefined = undefined
  private query = ""
  private waiting = false
  private readonly started = performance.now()
  private readonly context: Context.Context<never>
  constructor(context: Context.Context<never>) {
    this.context = context
  }

  saw(key: string, value: unknown): void {
    if (key === SYSTEM && typeof value === "string") {
      if (this.system === undefined) {
        this.waiting = true
        setPending(this.context, 1)
      }
      this.system = value
    } else if (key === QUERY && typeof value === "string") this.query = value
    else if (key === HANDED_OFF) this.handedOff()
  }

  ended(exit: Exit.Exit<unknown, unknown>): void {
    this.handedOff()
    if (this.system === undefined) return
    seriesOf(this.system, operationOf(this.query), errorTypeOf(exit)).updateUnsafe((performance.now() - this.started) / 1000, this.context)
  }

  private handedOff(): void {
    if (!this.waiting) return
    this.waiting = false
    setPending(this.context, -1)
  }
}

const setPending = (context: Context.Context<never>, change: number) => {
  pending += change
  dbPendingRequests.updateUnsafe(pending, context)
}

// One histogram per series (few: systems × operations × error types), made once.
const series = new Map<string, ReturnType<typeof dbOperationDurationSeries>>()
const seriesOf = (system: string, operation: string, errorType: string | undefined) => {
  const key = `${system}|${operation}|${errorType ?? ""}`
  let metric = series.get(key)
  if (metric === undefined) {
    metric = dbOperationDurationSeries(
      errorType === undefined
        ? { "db.system.name": system, "db.operation.name": operation }
        : { "db.system.name": system, "db.operation.name": operation, "error.type": errorType }
    )
    series.set(key, metric)
  }
  return metric
}

type SpanOptions = Parameters<Tracer.Tracer["span"]>[0]

/** A span of untraced work: the runtime's own placeholder, with the same ids and propagation marker. */
class Placeholder implements Tracer.Span {
  readonly _tag = "Span"
  readonly spanId = "noop"
  readonly traceId = "noop"
  readonly sampled = false
  readonly name: string
  readonly parent: Option.Option<Tracer.AnySpan>
  readonly annotations: Context.Context<never>
  readonly kind: Tracer.SpanKind
  readonly links: ReadonlyArray<Tracer.SpanLink> = []
  readonly attributes: ReadonlyMap<string, unknown> = new Map()
  status: Tracer.SpanStatus
  constructor(options: SpanOptions, status: Tracer.SpanStatus) {
    this.name = options.name
    this.parent = options.parent
    this.annotations = Context.add(options.annotations, Tracer.DisablePropagation, true)
    this.kind = options.kind
    this.status = status
  }
  attribute(_key: string, _value: unknown): void {}
  event(_name: string, _startTime: bigint, _attributes?: Record<string, unknown>): void {}
  addLinks(_links: ReadonlyArray<Tracer.SpanLink>): void {}
  end(_endTime: bigint, _exit: Exit.Exit<unknown, unknown>): void {}
}

const ENDED: Tracer.SpanStatus = { _tag: "Ended", startTime: 0n, endTime: 0n, exit: Exit.void }

/** An untraced client span (a statement, a provider call) that still feeds the database metrics. */
class UntracedClientSpan extends Placeholder {
  private readonly probe: StatementProbe
  constructor(options: SpanOptions, probe: StatementProbe) {
    super(options, { _tag: "Started", startTime: options.startTime })
    this.probe = probe
  }
  override attribute(key: string, value: unknown): void {
    if (this.status._tag === "Started") this.probe.saw(key, value)
  }
  override end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.status._tag === "Ended") return
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
    this.probe.ended(exit)
  }
}

/**
 * The tracer to install: `inner` (the OpenTelemetry tracer) with every client span observed,
 * or, when nothing exports spans (`inner` undefined), placeholders that record nothing else.
 * `context` holds the metric registry the figures go to.
 */
export const dbMetricsTracer = (context: Context.Context<never>, inner: Tracer.Tracer | undefined): Tracer.Tracer => {
  if (inner === undefined) {
    return Tracer.make({
      span: (options) =>
        options.kind === "client" ? new UntracedClientSpan(options, new StatementProbe(context)) : new Placeholder(options, ENDED)
    })
  }
  return Tracer.make({
    span(options) {
      const span = inner.span(options)
      if (options.kind !== "client") return span
      // The span keeps its own class (the OpenTelemetry tracer recognises its spans as parents): only two methods are wrapped.
      const probe = new StatementProbe(context)
      const attribute = span.attribute
      const end = span.end
      span.attribute = (key, value) => {
        if (span.status._tag === "Started") probe.saw(key, value)
        attribute.call(span, key, value)
      }
      span.end = (endTime, exit) => {
        if (span.status._tag === "Started") probe.ended(exit)
        end.call(span, endTime, exit)
      }
      return span
    },
    ...(inner.context === undefined ? {} : { context: inner.context })
  })
}

/**
 * The client with its top-level transactions counted in `db.client.connection.pending_requests`
 * from their start until their body runs (the connection is theirs and `BEGIN` done). The SQL
 * client opens no span per transaction wait, so this one method is wrapped; a nested
 * transaction (a savepoint) already holds its connection and is not counted.
 */
export const countTransactionWaits = <C extends SqlClient>(client: C): C => {
  const withTransaction = client.withTransaction
  const counted: SqlClient["withTransaction"] = (effect) =>
    Effect.flatMap(Effect.serviceOption(client.transactionService), (open) =>
      Option.isSome(open)
        ? withTransaction(effect)
        : Effect.withFiber((fiber) => {
          const context = fiber.context
          let waiting = true
          setPending(context, 1)
          const started = Effect.sync(() => {
            if (!waiting) return
            waiting = false
            setPending(context, -1)
          })
          return withTransaction(Effect.andThen(started, effect)).pipe(Effect.ensuring(started))
        }))
  return Object.assign(client, { withTransaction: counted })
}
