/**
 * The owner of `reports` and `report_runs` (decisions 0085, 0086). A scheduled slot becomes one
 * run through the unique (report, slot) key; runs are claimed with a short lease (`FOR UPDATE SKIP
 * LOCKED`) renewed by their holder while it works (decision 0119), so several workers share the
 * queue and a dead worker's run is taken over within seconds. Writes are fenced by the attempt.
 */
import { Context, Effect, Layer, Option, Schema, Struct } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Fragment } from "effect/sql/Statement"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { Report, ReportRun, type StoredFilters, type StoredRange, type StoredSchedule } from "../../../schema/reports.ts"
import { orderedClaimSettings } from "../../platform/claim-settings.ts"
import { atDatabaseBoundary, decodeRows } from "../../platform/database.ts"
import type { Keyset } from "../../platform/pagination.ts"
import type { TraceContext } from "../../platform/tracing.ts"

/**
 * The schedule's read of due reports (see `enqueueDue`), as a statement: test/api/queue-claim-plans.test.ts
 * checks its generic plan's cost at growing backlogs, as it does `claimStatements`'.
 */
export const dueStatement = (sql: SqlClient, reportColumns: Fragment) =>
  sql`
    SELECT ${reportColumns}, (SELECT p.time_zone FROM profiles p WHERE p.id = reports.profile_id) AS time_zone
    -- Bounded on both sides: without statistics the planner reads a two-sided range as a small
    -- share of the table (a one-sided bound as a third), so even a plan built on an empty table
    -- walks reports_due in order instead of reading and sorting every due report.
    FROM reports WHERE next_run_at <= now() AND next_run_at > '-infinity'::timestamptz
    ORDER BY next_run_at LIMIT 100 FOR UPDATE SKIP LOCKED`

/**
 * The statements of a claim (see `claim`), in its order: `unknownSends` fails a send cut short by
 * a dead worker (it may have reached the provider: never sent twice, reported instead),
 * `exhausted` fails a run out of attempts, `claim` takes the oldest claimable run.
 */
export const claimStatements = (sql: SqlClient, leaseSeconds: number, maxAttempts: number, runColumns: Fragment) => ({
  unknownSends: sql`
    UPDATE report_runs SET status = 'failed', error = 'send_outcome_unknown'
    WHERE status = 'sending' AND lease_until IS NOT NULL AND lease_until < now()`,
  exhausted: sql`
    UPDATE report_runs SET status = 'failed', error = COALESCE(error, 'attempts_exhausted'), lease_until = NULL
    WHERE status = 'running' AND lease_until < now() AND attempts >= ${maxAttempts}`,
  claim: sql`
    UPDATE report_runs SET status = 'running', attempts = attempts + 1, lease_until = now() + make_interval(secs => ${leaseSeconds})
    WHERE id = (
      SELECT id FROM report_runs
      WHERE status = 'pending' OR (status = 'running' AND lease_until < now())
      ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING ${runColumns}, traceparent, tracestate`
})

/** The phases of a run that hold a lease: generating (`running`) and sending (`sending`). */
export type LeasedPhase = "running" | "sending"

/**
 * The renewal of a run's lease by its holder (decision 0119): found through the primary key, and
 * only while the run is still in `phase` of the attempt that holds it (a run taken over has
 * another attempt; a send cut short was failed). test/api/queue-claim-plans.test.ts and
 * test/api/lease-takeover.test.ts check its plan.
 */
export const renewStatement = (sql: SqlClient, profileId: string, runId: string, attempts: number, phase: LeasedPhase, leaseSeconds: number) =>
  sql`
    UPDATE report_runs SET lease_until = now() + make_interval(secs => ${leaseSeconds})
    -- The whole key (id, profile_id): a probe of one row whatever the planner knows of the table.
    WHERE id = ${runId} AND profile_id = ${profileId} AND attempts = ${attempts} AND status = ${phase}
    RETURNING id`

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** A report as stored is the report as answered. */
export const ReportRow = Schema.Struct(Report.fields)
export type ReportRow = typeof ReportRow.Type

/** A run as answered, but its range and artifacts as columns (the answer builds them), with its profile and attempts. */
export const RunRow = Schema.Struct({
  ...Struct.omit(ReportRun.fields, ["range", "csv", "pdf"]),
  profile_id: Schema.String,
  range_start: Schema.NullOr(Schema.String),
  range_end: Schema.NullOr(Schema.String),
  csv_bytes: Schema.NullOr(Schema.Int),
  pdf_bytes: Schema.NullOr(Schema.Int),
  attempts: Schema.Int
})
export type RunRow = typeof RunRow.Type

/** A claimed run with the trace context of the request it belongs to (decision 0101): null when untraced. */
export const ClaimedRun = Schema.Struct({
  ...RunRow.fields,
  traceparent: Schema.NullOr(Schema.String),
  tracestate: Schema.NullOr(Schema.String)
})
export type ClaimedRun = typeof ClaimedRun.Type

/** What a scheduled run needs to know of its profile, read from tenancy's tables. */
export const ProfileRow = Schema.Struct({
  profile_id: Schema.String,
  workspace_id: Schema.String,
  time_zone: Schema.String,
  attribution_enabled: Schema.Boolean
})
export type ProfileRow = typeof ProfileRow.Type

export interface NewReport {
  readonly id: string
  readonly profileId: string
  readonly name: string
  readonly reads: ReadonlyArray<string>
  readonly range: StoredRange
  readonly filters: StoredFilters
  readonly schedule: StoredSchedule | null
  readonly recipients: ReadonlyArray<string>
  readonly nextRunAt: Date | null
  /** The trace context of the creating request, for the spans of the scheduled runs (decision 0101). */
  readonly queuedBy: TraceContext | null
}

/** A trace context as its two columns: an empty `tracestate` is stored null. */
const traceColumns = (trace: TraceContext | null) =>
  [trace?.traceparent ?? null, trace === null || trace.tracestate === "" ? null : trace.tracestate] as const

export interface Generated {
  readonly rangeStart: string
  readonly rangeEnd: string
  readonly csv: string
  readonly pdf: Uint8Array
}

export class ReportsRepo extends Context.Service<ReportsRepo, {
  readonly profile: (profileId: string) => Repo<Option.Option<ProfileRow>>
  readonly count: (profileId: string) => Repo<number>
  readonly insert: (report: NewReport) => Repo<ReportRow>
  readonly list: (profileId: string, limit: number, after: Option.Option<Keyset>) => Repo<ReadonlyArray<ReportRow>>
  readonly find: (profileId: string, id: string) => Repo<Option.Option<ReportRow>>
  readonly findById: (id: string) => Repo<Option.Option<ReportRow>>
  /** A manual run, claimed by its caller at once (`running`, leased); `trace` is its request's, kept for a takeover. */
  readonly insertManualRun: (id: string, report: ReportRow, leaseSeconds: number, trace: TraceContext | null) => Repo<RunRow>
  readonly run: (reportId: string, runId: string) => Repo<Option.Option<RunRow>>
  /** The report's runs, newest first, keyset-paged (one more than `limit`). */
  readonly runs: (reportId: string, limit: number, before: Option.Option<Keyset>) => Repo<ReadonlyArray<RunRow>>
  readonly csv: (reportId: string, runId: string) => Repo<Option.Option<string>>
  readonly pdf: (reportId: string, runId: string) => Repo<Option.Option<Uint8Array>>
  /** `running` → `generated`, by the attempt that holds it; false when the run is no longer that attempt's. */
  readonly markGenerated: (runId: string, attempts: number, generated: Generated) => Repo<boolean>
  /**
   * `generated` → `sending` (the send is about to be made), leased `leaseSeconds`; false when the run
   * is in no such state.
   */
  readonly markSending: (runId: string, attempts: number, recipients: ReadonlyArray<string>, leaseSeconds: number) => Repo<boolean>
  /** `sending` → `sent`; false when the send's lease was lost (the run was failed `send_outcome_unknown`). */
  readonly markSent: (runId: string, attempts: number, messageId: string) => Repo<boolean>
  /**
   * Fails a run in `phase` of attempt `attempts` (nothing when it is no longer there); `back` puts a
   * `sending` run back to `generated` when the provider surely sent nothing.
   */
  readonly markFailed: (runId: string, attempts: number, phase: LeasedPhase, error: string, back?: "generated") => Repo<void>
  /** Fails a run of attempt `attempts` still open (`running`, or `generated` after a refused send, whose reason is kept). */
  readonly failOpen: (runId: string, attempts: number, error: string) => Repo<void>
  /** Extends the lease of a run in `phase` of attempt `attempts`; false when it is no longer that (decision 0119). */
  readonly renew: (profileId: string, runId: string, attempts: number, phase: LeasedPhase, leaseSeconds: number) => Repo<boolean>
  /**
   * Every report whose next slot is due: a run per (report, slot) (once, whoever races), and the
   * report moved to its next slot (`nextOf`). Answers the runs this call created.
   */
  readonly enqueueDue: (nextOf: (report: ReportRow, timeZone: string, slot: Date) => Date) => Repo<number>
  /**
   * Claims a run to work (`pending`, or `running` with its lease expired: attempts + 1). A run
   * left `sending` by a dead worker is never sent again: it is failed `send_outcome_unknown`.
   */
  readonly claim: (leaseSeconds: number, maxAttempts: number) => Repo<Option.Option<ClaimedRun>>
}>()("svc/ReportsRepo") {
  static readonly layer = Layer.effect(ReportsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const reportColumns = sql.literal(
        `id, profile_id, name, reads, range, filters, schedule, recipients, ${iso("next_run_at")} AS next_run_at, ${iso("created_at")} AS created_at`
      )
      const runColumns = sql.literal(
        `id, report_id, profile_id, trigger, ${iso("slot")} AS slot, status, range_start::text AS range_start,
         range_end::text AS range_end, csv_bytes, pdf_bytes, recipients, message_id, error, attempts, ${iso("created_at")} AS created_at,
         ${iso("generated_at")} AS generated_at, ${iso("sent_at")} AS sent_at`
      )
      const reports = decodeRows(ReportRow)
      const runs = decodeRows(RunRow)
      const claimedRuns = decodeRows(ClaimedRun)
      const profiles = decodeRows(ProfileRow)

      const profile = (profileId: string) =>
        Effect.map(
          profiles(sql`
            SELECT p.id AS profile_id, p.workspace_id, p.time_zone,
                   (p.provisioned_by_app_id IS NULL OR COALESCE((
                     SELECT e.enabled FROM entitlements e WHERE e.profile_id = p.id AND e.feature = 'svc_attribution'), false))
                     AS attribution_enabled
            FROM profiles p WHERE p.id = ${profileId} AND p.archived_at IS NULL`),
          (rows) => Option.fromNullishOr(rows[0])
        )

      const count = (profileId: string) =>
        Effect.map(sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM reports WHERE profile_id = ${profileId}`, (rows) => rows[0]?.n ?? 0)

      const insert = (report: NewReport) => {
        const [traceparent, tracestate] = traceColumns(report.queuedBy)
        return Effect.flatMap(
          reports(sql`
            INSERT INTO reports (id, profile_id, name, reads, range, filters, schedule, recipients, next_run_at, traceparent, tracestate)
            VALUES (${report.id}, ${report.profileId}, ${report.name}, ${JSON.stringify(report.reads)}::jsonb,
                    ${JSON.stringify(report.range)}::jsonb, ${JSON.stringify(report.filters)}::jsonb,
                    ${report.schedule === null ? null : JSON.stringify(report.schedule)}::jsonb,
                    ${JSON.stringify(report.recipients)}::jsonb, ${report.nextRunAt === null ? null : report.nextRunAt.toISOString()}::timestamptz,
                    ${traceparent}::text, ${tracestate}::text)
            RETURNING ${reportColumns}`),
          (rows) => (rows[0] === undefined ? Effect.die(new Error("INSERT reports returned no row")) : Effect.succeed(rows[0]))
        )
      }

      const list = (profileId: string, limit: number, after: Option.Option<Keyset>) => {
        const from = Option.match(after, {
          onNone: () => sql``,
          onSome: (k) => sql`AND (created_at, id) > (${k.createdAt}::timestamptz, ${k.id}::uuid)`
        })
        return reports(sql`
          SELECT ${reportColumns} FROM reports WHERE profile_id = ${profileId} ${from}
          ORDER BY created_at, id LIMIT ${limit + 1}`)
      }

      const listRuns = (reportId: string, limit: number, before: Option.Option<Keyset>) => {
        const from = Option.match(before, {
          onNone: () => sql``,
          onSome: (k) => sql`AND (created_at, id) < (${k.createdAt}::timestamptz, ${k.id}::uuid)`
        })
        return runs(sql`
          SELECT ${runColumns} FROM report_runs WHERE report_id = ${reportId} ${from}
          ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`)
      }

      const find = (profileId: string, id: string) =>
        Effect.map(reports(sql`SELECT ${reportColumns} FROM reports WHERE id = ${id} AND profile_id = ${profileId}`), (rows) =>
          Option.fromNullishOr(rows[0]))

      const findById = (id: string) =>
        Effect.map(reports(sql`SELECT ${reportColumns} FROM reports WHERE id = ${id}`), (rows) => Option.fromNullishOr(rows[0]))

      const insertManualRun = (id: string, report: ReportRow, leaseSeconds: number, trace: TraceContext | null) => {
        const [traceparent, tracestate] = traceColumns(trace)
        return Effect.flatMap(
          runs(sql`
            INSERT INTO report_runs (id, report_id, profile_id, trigger, status, attempts, lease_until, traceparent, tracestate)
            VALUES (${id}, ${report.id}, ${report.profile_id}, 'manual', 'running', 1, now() + make_interval(secs => ${leaseSeconds}),
                    ${traceparent}::text, ${tracestate}::text)
            RETURNING ${runColumns}`),
          (rows) => (rows[0] === undefined ? Effect.die(new Error("INSERT report_runs returned no row")) : Effect.succeed(rows[0]))
        )
      }

      const run = (reportId: string, runId: string) =>
        Effect.map(runs(sql`SELECT ${runColumns} FROM report_runs WHERE id = ${runId} AND report_id = ${reportId}`), (rows) =>
          Option.fromNullishOr(rows[0]))

      const csv = (reportId: string, runId: string) =>
        Effect.map(
          sql<{ readonly csv: string | null }>`SELECT csv FROM report_runs WHERE id = ${runId} AND report_id = ${reportId}`,
          (rows) => Option.fromNullishOr(rows[0]?.csv)
        )

      const pdf = (reportId: string, runId: string) =>
        Effect.map(
          sql<{ readonly pdf_base64: string | null }>`SELECT pdf_base64 FROM report_runs WHERE id = ${runId} AND report_id = ${reportId}`,
          (rows) => Option.map(Option.fromNullishOr(rows[0]?.pdf_base64), (b64) => new Uint8Array(Buffer.from(b64, "base64")))
        )

      const markGenerated = (runId: string, attempts: number, generated: Generated) =>
        Effect.map(
          sql<{ readonly id: string }>`
            UPDATE report_runs SET status = 'generated', range_start = ${generated.rangeStart}::date, range_end = ${generated.rangeEnd}::date,
              csv = ${generated.csv}, pdf_base64 = ${Buffer.from(generated.pdf).toString("base64")},
              csv_bytes = ${Buffer.byteLength(generated.csv, "utf8")}, pdf_bytes = ${generated.pdf.length},
              generated_at = now(), error = NULL
            -- The attempt that claimed it: a worker whose lease was taken over writes nothing.
            WHERE id = ${runId} AND status = 'running' AND attempts = ${attempts}
            RETURNING id`,
          (rows) => rows.length > 0
        )

      // The send's lease is short and renewed while the send runs (decision 0119): a sender that dies
      // leaves `sending` failed `send_outcome_unknown` within seconds, never sent again.
      const markSending = (runId: string, attempts: number, recipients: ReadonlyArray<string>, leaseSeconds: number) =>
        Effect.map(
          sql<{ readonly id: string }>`
            UPDATE report_runs SET status = 'sending', recipients = ${JSON.stringify(recipients)}::jsonb,
              lease_until = now() + make_interval(secs => ${leaseSeconds})
            WHERE id = ${runId} AND status = 'generated' AND attempts = ${attempts} RETURNING id`,
          (rows) => rows.length > 0
        )

      const markSent = (runId: string, attempts: number, messageId: string) =>
        Effect.map(
          sql<{ readonly id: string }>`
            UPDATE report_runs SET status = 'sent', message_id = ${messageId}, sent_at = now(), error = NULL, lease_until = NULL
            WHERE id = ${runId} AND status = 'sending' AND attempts = ${attempts} RETURNING id`,
          (rows) => rows.length > 0
        )

      const markFailed = (runId: string, attempts: number, phase: LeasedPhase, error: string, back?: "generated") =>
        Effect.asVoid(sql`
          UPDATE report_runs SET status = ${back ?? "failed"}, error = ${error}, lease_until = NULL
          WHERE id = ${runId} AND status = ${phase} AND attempts = ${attempts}`)

      const failOpen = (runId: string, attempts: number, error: string) =>
        Effect.asVoid(sql`
          UPDATE report_runs SET status = 'failed', error = COALESCE(error, ${error}), lease_until = NULL
          WHERE id = ${runId} AND status IN ('running', 'generated') AND attempts = ${attempts}`)

      const renew = (profileId: string, runId: string, attempts: number, phase: LeasedPhase, leaseSeconds: number) =>
        Effect.map(renewStatement(sql, profileId, runId, attempts, phase, leaseSeconds), (rows) => rows.length > 0)

      const dueRows = decodeRows(Schema.Struct({ ...ReportRow.fields, time_zone: Schema.String }))
      const enqueueDue = (nextOf: (report: ReportRow, timeZone: string, slot: Date) => Date) =>
        sql.withTransaction(Effect.gen(function*() {
          const due = yield* dueRows(dueStatement(sql, reportColumns))
          let created = 0
          for (const report of due) {
            if (report.next_run_at === null) continue
            const slot = new Date(report.next_run_at)
            const inserted = yield* sql<{ readonly id: string }>`
              -- Queued by the request that set the schedule: its trace context goes with the run.
              INSERT INTO report_runs (id, report_id, profile_id, trigger, slot, status, traceparent, tracestate)
              SELECT ${crypto.randomUUID()}::uuid, r.id, r.profile_id, 'scheduled', ${slot.toISOString()}::timestamptz, 'pending', r.traceparent, r.tracestate
              FROM reports r WHERE r.id = ${report.id}
              ON CONFLICT (report_id, slot, profile_id) DO NOTHING RETURNING id`
            created += inserted.length
            // Skipped slots (the service was down for days) are not caught up: the next one is after now.
            let next = nextOf(report, report.time_zone, slot)
            while (next.getTime() <= Date.now()) next = nextOf(report, report.time_zone, next)
            yield* sql`
              UPDATE reports SET next_run_at = ${next.toISOString()}::timestamptz, updated_at = now()
              WHERE id = ${report.id} AND next_run_at = ${slot.toISOString()}::timestamptz`
          }
          return created
        }))

      const claim = (leaseSeconds: number, maxAttempts: number) =>
        sql.withTransaction(Effect.gen(function*() {
          const statements = claimStatements(sql, leaseSeconds, maxAttempts, runColumns)
          yield* orderedClaimSettings(sql)
          yield* statements.unknownSends
          yield* statements.exhausted
          const claimed = yield* claimedRuns(statements.claim)
          return Option.fromNullishOr(claimed[0])
        }))

      return {
        ...atDatabaseBoundary({
          profile,
          count,
          insert,
          list,
          find,
          findById,
          insertManualRun,
          run,
          runs: listRuns,
          csv,
          pdf,
          markGenerated,
          markSending,
          markSent,
          markFailed,
          failOpen,
          renew,
          enqueueDue,
          claim
        })
      }
    })
  )
}

