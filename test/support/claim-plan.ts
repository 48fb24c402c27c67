/**
 * Measuring a queue's claim as a pooled connection runs it (issue 34): the statement prepared as the
 * driver prepares it, its generic plan forced (`plan_cache_mode = force_generic_plan`), never
 * ANALYZE (autovacuum is off on these machines, so no statistics are ever gathered). EXPLAIN gives
 * the plan's cost and the rows it expects; the prepared statement is then run, in transactions
 * rolled back, for its time. Used by test/api/webhooks-claim-plan.test.ts and
 * test/api/queue-claim-plans.test.ts.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { createHash } from "node:crypto"
import { onDatabase } from "./pg-databases.ts"

/** A bound parameter as an SQL literal (EXECUTE takes its arguments as text; the statement's casts type them). */
export const literal = (value: unknown): string => {
  if (value === null) return "NULL"
  if (Array.isArray(value)) return literal(`{${value.map((item) => `"${String(item).replace(/(["\\])/g, "\\$1")}"`).join(",")}}`)
  if (typeof value === "number" || typeof value === "boolean") return String(value)
  return `'${String(value).replace(/'/g, "''")}'`
}

type Compiled = readonly [string, ReadonlyArray<unknown>]

export interface Depth {
  readonly pending: number
  readonly cost: number
  /** The rows the plan expects to answer. */
  readonly rows: number
  readonly plan: string
  /** The rows the statement answered when run. */
  readonly answered: number
  /** The fastest of three runs. */
  readonly ms: number
}

let prepared = 0

/**
 * `statement`'s forced generic plan and its runs (rolled back), at `pending` rows of backlog. With
 * `mode` "custom", the plan PostgreSQL makes for these very arguments instead: what a prepared
 * statement runs for its first five executions, and for good when its generic plan looks dearer.
 */
export const measure = (
  pending: number,
  statement: Compiled | { readonly compile: () => Compiled },
  mode: "generic" | "custom" = "generic",
  settings?: string
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [text, params] = "compile" in statement ? statement.compile() : statement
    // EXECUTE takes no parentheses when the statement has no parameters.
    const args = params.length === 0 ? "" : `(${params.map(literal).join(", ")})`
    // The session that prepares it keeps the generic plan, as a pooled connection would (or, in
    // "custom" mode, plans each execution for its arguments).
    yield* sql.unsafe(`SET plan_cache_mode = force_${mode}_plan`)
    // A name of its own: the driver keeps what it learnt of a statement (whether it answers rows) by
    // its text, and two statements' `EXECUTE measured` would read the same.
    const name = `measured_${++prepared}`
    yield* sql.unsafe(`PREPARE ${name} AS ${text}`)
    // Planned, as it runs, in a transaction that first applies the claim's own settings, if any.
    yield* sql.unsafe(`BEGIN`)
    if (settings !== undefined) yield* sql.unsafe(settings)
    const [explained] = yield* sql.unsafe<{ "QUERY PLAN": ReadonlyArray<{ Plan: { "Total Cost": number; "Plan Rows": number } }> }>(
      `EXPLAIN (FORMAT JSON) EXECUTE ${name}${args}`
    )
    const plan = yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN EXECUTE ${name}${args}`)
    yield* sql.unsafe(`COMMIT`)
    // Three runs: the first read of freshly seeded rows also writes their hint bits.
    let ms = Infinity
    let answered = 0
    for (let run = 0; run < 3; run++) {
      yield* sql.unsafe(`BEGIN`)
      if (settings !== undefined) yield* sql.unsafe(settings)
      const started = performance.now()
      const rows = yield* sql.unsafe(`EXECUTE ${name}${args}`)
      ms = Math.min(ms, performance.now() - started)
      answered = rows.length
      yield* sql.unsafe(`ROLLBACK`)
    }
    yield* sql.unsafe(`DEALLOCATE ${name}`)
    yield* sql.unsafe(`RESET plan_cache_mode`)
    return {
      pending,
      cost: explained!["QUERY PLAN"][0]!.Plan["Total Cost"],
      rows: explained!["QUERY PLAN"][0]!.Plan["Plan Rows"],
      plan: plan.map((row) => row["QUERY PLAN"]).join("\n"),
      answered,
      ms
    } satisfies Depth
  })

/** Whether any of `tables` has statistics (it must not: the plans are costed without them). */
export const analyzedTables = (tables: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_stat_user_tables
      WHERE relname = ANY(${tables}::text[]) AND (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)`
    return row?.n ?? 0
  })

/**
 * A statement prepared now (its generic plan built now, as a pooled connection builds it on the
 * table as it is) and kept: `run` EXPLAINs and times that same cached plan later, after the backlog
 * has grown. Nothing replans it meanwhile: with no ANALYZE and no DDL nothing invalidates it.
 */
export const keep = (statement: Compiled | { readonly compile: () => Compiled }, settings?: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [text, params] = "compile" in statement ? statement.compile() : statement
    const args = params.length === 0 ? "" : `(${params.map(literal).join(", ")})`
    const name = `kept_${++prepared}`
    yield* sql.unsafe(`SET plan_cache_mode = force_generic_plan`)
    yield* sql.unsafe(`PREPARE ${name} AS ${text}`)
    // The first EXPLAIN EXECUTE builds the generic plan and caches it (under the claim's settings, if any).
    yield* sql.unsafe(`BEGIN`)
    if (settings !== undefined) yield* sql.unsafe(settings)
    yield* sql.unsafe(`EXPLAIN EXECUTE ${name}${args}`)
    yield* sql.unsafe(`COMMIT`)
    yield* sql.unsafe(`RESET plan_cache_mode`)
    const run = Effect.gen(function*() {
      // Forced again: in the default mode a statement executed fewer than five times gets a custom
      // plan made for the table as it is now, and the kept generic plan would go unused.
      yield* sql.unsafe(`SET plan_cache_mode = force_generic_plan`)
      const plan = yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN EXECUTE ${name}${args}`)
      let ms = Infinity
      let answered = 0
      for (let round = 0; round < 3; round++) {
        yield* sql.unsafe(`BEGIN`)
        if (settings !== undefined) yield* sql.unsafe(settings)
        const started = performance.now()
        const rows = yield* sql.unsafe(`EXECUTE ${name}${args}`)
        ms = Math.min(ms, performance.now() - started)
        answered = rows.length
        yield* sql.unsafe(`ROLLBACK`)
      }
      yield* sql.unsafe(`RESET plan_cache_mode`)
      return { plan: plan.map((row) => row["QUERY PLAN"]).join("\n"), ms, answered }
    })
    return { run, release: sql.unsafe(`DEALLOCATE ${name}`) }
  })

/** The uuid PostgreSQL's `md5(text)::uuid` makes of `text`: the id of a row seeded in SQL, known to the test. */
export const md5Uuid = (text: string) =>
  createHash("md5").update(text).digest("hex").replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, "$1-$2-$3-$4-$5")

/** `effect` on the test database of `DATABASE_URL`, as the plan tests run their statements. */
export const onTestDatabase = <A, E>(effect: Effect.Effect<A, E, SqlClient>) =>
  Effect.promise(() => onDatabase(process.env["DATABASE_URL"] ?? "", effect))
