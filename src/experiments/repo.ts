/**
 * The owner of `experiments` (migration 0060, decision 0122). Every transition is conditional on
 * the row's `version`: a transition decided from a stale read changes nothing.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { Design, ExperimentConfig, ExperimentKind, ExperimentStatus } from "../../schema/experiments.ts"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable } from "../platform/database.ts"
import type { Keyset } from "../platform/pagination.ts"

export const ExecutionFailure = Schema.Struct({
  /** `day` (the schedule day `date`) or `restore` (`date` null). */
  what: Schema.Literals(["day", "restore"]),
  date: Schema.NullOr(Schema.String),
  /** The error's code (its tag). */
  error: Schema.String,
  at: Schema.String
})
export type ExecutionFailure = typeof ExecutionFailure.Type

/** Failures kept in an execution: enough for a window's worth of daily retries to be seen. */
export const MAX_FAILURES = 20

/** An upload of the customer list that left an audience holdout's customers out (migration 0063). */
export const HoldoutUpload = Schema.Struct({
  uploaded_at: Schema.String,
  platform_audience_id: Schema.NullOr(Schema.String),
  held_out: Schema.Int
})
export type HoldoutUpload = typeof HoldoutUpload.Type

/** A switchback's execution (migration 0061, decision 0124): what it changed and whether it is undone. */
export const Execution = Schema.Struct({
  /** The profile's context, kept at start for the day tick (which has no request). */
  workspace_id: Schema.String,
  attribution_enabled: Schema.Boolean,
  /** The target's status before the experiment's first action; null until one ran. */
  pre_status: Schema.NullOr(Schema.String),
  /** Each schedule day applied once, with its ad action (`applied_at` absent on days applied before it was kept). */
  applied: Schema.Array(Schema.Struct({
    date: Schema.String,
    on: Schema.Boolean,
    action_id: Schema.String,
    outcome: Schema.String,
    applied_at: Schema.optionalKey(Schema.String)
  })),
  /** The restore on stop or completion: its ad action (null when nothing was ever changed). */
  restored: Schema.NullOr(Schema.Struct({ action_id: Schema.NullOr(Schema.String), status: Schema.NullOr(Schema.String) })),
  /** Ad actions refused or failed (each retried by the next tick), the latest MAX_FAILURES. */
  failures: Schema.optionalKey(Schema.Array(ExecutionFailure))
})
export type Execution = typeof Execution.Type

export const ExperimentRow = Schema.Struct({
  profile_id: Schema.String,
  id: Schema.String,
  kind: ExperimentKind,
  name: Schema.String,
  status: ExperimentStatus,
  status_reason: Schema.NullOr(Schema.String),
  status_note: Schema.NullOr(Schema.String),
  config: ExperimentConfig,
  conversion_key: Schema.String,
  measure: Schema.Literals(["count", "value"]),
  target_key: Schema.String,
  salt: Schema.String,
  window_start: Schema.String,
  window_end: Schema.String,
  design: Schema.NullOr(Design),
  version: Schema.Int,
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  stopped_at: Schema.NullOr(Schema.String),
  completed_at: Schema.NullOr(Schema.String),
  execution: Schema.NullOr(Execution),
  holdout_uploads: Schema.Array(HoldoutUpload),
  /** The profile's IANA time zone, read with the row: the experiment's days are its local days (decision 0135). */
  time_zone: Schema.String
})
export type ExperimentRow = typeof ExperimentRow.Type

export interface NewExperiment {
  readonly profileId: string
  readonly id: string
  readonly kind: ExperimentKind
  readonly name: string
  readonly config: ExperimentConfig
  readonly conversionKey: string
  readonly measure: "count" | "value"
  readonly targetKey: string
  readonly salt: string
  readonly windowStart: string
  readonly windowEnd: string
  readonly design: Design | null
}

export interface Transition {
  readonly status: "running" | "completed" | "stopped"
  readonly reason: string
  readonly note: string | null
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class ExperimentsRepo extends Context.Service<ExperimentsRepo, {
  readonly insert: (row: NewExperiment) => Repo<ExperimentRow>
  readonly find: (profileId: string, id: string) => Repo<Option.Option<ExperimentRow>>
  readonly list: (profileId: string, after: Option.Option<Keyset>, limit: number) => Repo<ReadonlyArray<ExperimentRow>>
  /** Another running experiment of the profile on the same target, if any. */
  readonly runningOn: (profileId: string, targetKey: string, exceptId: string) => Repo<Option.Option<string>>
  /**
   * Moves the experiment when it is still at `version` (and, to running, when no other experiment
   * runs on its target); none when either no longer holds.
   */
  readonly transition: (profileId: string, id: string, version: number, change: Transition) => Repo<Option.Option<ExperimentRow>>
  /** The salt and fraction of each audience_holdout of the profile running at the instant `at` (its window not over on that local day). */
  readonly runningHoldouts: (profileId: string, at: string) => Repo<ReadonlyArray<{ readonly id: string; readonly salt: string; readonly fraction: number }>>
  /** Appends an upload to a holdout's exclusion state, keeping the latest 50. */
  readonly recordHoldoutUpload: (profileId: string, id: string, upload: HoldoutUpload) => Repo<void>
  /** A switchback's execution, as its entity (one message at a time) last left it. */
  readonly setExecution: (profileId: string, id: string, execution: Execution) => Repo<void>
  /**
   * Experiments the tick advances: switchbacks of every profile still to advance (running) or to
   * restore (ended, not restored), and running experiments of any kind whose window is over.
   */
  readonly dueSwitchbacks: () => Repo<ReadonlyArray<{ readonly profile_id: string; readonly id: string }>>
  /**
   * The latest completed switchback or pre/post of each campaign of the profile (metric a count),
   * completed within 365 days, with its age in whole days: calibration's sources (decision 0124).
   */
  readonly calibrationSources: (profileId: string) => Repo<ReadonlyArray<{ readonly row: ExperimentRow; readonly age_days: number }>>
  /** The profile's IANA time zone (UTC when unset): the design's history is of its local days. */
  readonly timeZoneOf: (profileId: string) => Repo<string>
  /** Runs `effect` in one transaction (a completion and its `experiment.completed` outbox row commit together). */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/ExperimentsRepo") {
  static readonly layer = Layer.effect(ExperimentsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const at = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
      const columns = sql.literal(`profile_id::text AS profile_id, id::text AS id, kind, name, status, status_reason, status_note,
        config, conversion_key, measure, target_key, salt,
        to_char(window_start, 'YYYY-MM-DD') AS window_start, to_char(window_end, 'YYYY-MM-DD') AS window_end,
        design, version, ${at("created_at")} AS created_at, ${at("started_at")} AS started_at,
        ${at("stopped_at")} AS stopped_at, ${at("completed_at")} AS completed_at, execution, holdout_uploads,
        COALESCE((SELECT p.time_zone FROM profiles p WHERE p.id = profile_id), 'UTC') AS time_zone`)
      const one = decodeFirstRow(ExperimentRow)
      const many = decodeRows(ExperimentRow)

      const insert = (row: NewExperiment) =>
        Effect.flatMap(
          one(sql`
            INSERT INTO experiments (profile_id, id, kind, name, config, conversion_key, measure, target_key, salt,
                                     window_start, window_end, design)
            VALUES (${row.profileId}, ${row.id}, ${row.kind}, ${row.name}, ${JSON.stringify(row.config)}::jsonb,
                    ${row.conversionKey}, ${row.measure}, ${row.targetKey}, ${row.salt}, ${row.windowStart}::date,
                    ${row.windowEnd}::date, ${row.design === null ? null : JSON.stringify(row.design)}::jsonb)
            RETURNING ${columns}`),
          (found) => Option.match(found, { onNone: () => Effect.die("the insert returned no row"), onSome: Effect.succeed })
        )

      const find = (profileId: string, id: string) =>
        one(sql`SELECT ${columns} FROM experiments WHERE profile_id = ${profileId} AND id = ${id}`)

      const list = (profileId: string, after: Option.Option<Keyset>, limit: number) =>
        many(sql`
          SELECT ${columns} FROM experiments
          WHERE profile_id = ${profileId}
            AND ${Option.match(after, {
          onNone: () => sql`true`,
          onSome: (keyset) => sql`(created_at, id) > (${keyset.createdAt}::timestamptz, ${keyset.id}::uuid)`
        })}
          ORDER BY created_at, id
          LIMIT ${limit + 1}`)

      const idRow = decodeFirstRow(Schema.Struct({ id: Schema.String }))
      const runningOn = (profileId: string, targetKey: string, exceptId: string) =>
        Effect.map(
          idRow(sql`
            SELECT id::text AS id FROM experiments
            WHERE profile_id = ${profileId} AND target_key = ${targetKey} AND status = 'running' AND id <> ${exceptId}
            LIMIT 1`),
          Option.map((row) => row.id)
        )

      const transition = (profileId: string, id: string, version: number, change: Transition) =>
        one(sql`
          UPDATE experiments e SET
            status = ${change.status}, status_reason = ${change.reason}, status_note = ${change.note},
            started_at = CASE WHEN ${change.status} = 'running' THEN now() ELSE started_at END,
            stopped_at = CASE WHEN ${change.status} = 'stopped' THEN now() ELSE stopped_at END,
            completed_at = CASE WHEN ${change.status} = 'completed' THEN now() ELSE completed_at END,
            version = version + 1, updated_at = now()
          WHERE e.profile_id = ${profileId} AND e.id = ${id} AND e.version = ${version}
            AND (${change.status} <> 'running' OR NOT EXISTS (
              SELECT 1 FROM experiments o
              WHERE o.profile_id = e.profile_id AND o.target_key = e.target_key AND o.status = 'running' AND o.id <> e.id))
          RETURNING ${columns}`)

      const holdoutRows = decodeRows(Schema.Struct({ id: Schema.String, salt: Schema.String, fraction: Schema.Finite }))
      const runningHoldouts = (profileId: string, at: string) =>
        holdoutRows(sql`
          SELECT id::text AS id, salt, (config->>'holdout_fraction')::float8 AS fraction FROM experiments
          WHERE profile_id = ${profileId} AND kind = 'audience_holdout' AND status = 'running'
            AND window_end >= (${at}::timestamptz AT TIME ZONE COALESCE((SELECT p.time_zone FROM profiles p WHERE p.id = profile_id), 'UTC'))::date`)

      const setExecution = (profileId: string, id: string, execution: Execution) =>
        Effect.asVoid(sql`
          UPDATE experiments SET execution = ${JSON.stringify(execution)}::jsonb, updated_at = now()
          WHERE profile_id = ${profileId} AND id = ${id}`)

      // One statement: concurrent uploads each append (row lock), none is lost.
      const recordHoldoutUpload = (profileId: string, id: string, upload: HoldoutUpload) =>
        Effect.asVoid(sql`
          UPDATE experiments
          SET holdout_uploads = jsonb_path_query_array(holdout_uploads || jsonb_build_array(${JSON.stringify(upload)}::jsonb), '$[last - 49 to last]')
          WHERE profile_id = ${profileId} AND id = ${id}`)

      const dueRows = decodeRows(Schema.Struct({ profile_id: Schema.String, id: Schema.String }))
      const dueSwitchbacks = () =>
        dueRows(sql`
          SELECT profile_id::text AS profile_id, id::text AS id FROM experiments
          WHERE (kind = 'switchback' AND execution IS NOT NULL AND execution->'restored' = 'null'::jsonb)
             -- Any kind whose window is over completes on the tick, not only when someone reads it
             -- (its experiment.completed event and its calibration factor wait for that).
             -- Over: its last local day has passed in the profile's time zone.
             OR (status = 'running' AND window_end < (now() AT TIME ZONE COALESCE((SELECT p.time_zone FROM profiles p WHERE p.id = profile_id), 'UTC'))::date)
          ORDER BY profile_id, id`)

      const sourceRows = decodeRows(Schema.Struct({ ...ExperimentRow.fields, age_days: Schema.Int }))
      const calibrationSources = (profileId: string) =>
        Effect.map(
          sourceRows(sql`
            SELECT DISTINCT ON (target_key) ${columns},
                   floor(extract(epoch FROM now() - completed_at) / 86400)::int AS age_days
            FROM experiments
            WHERE profile_id = ${profileId} AND status = 'completed' AND kind IN ('switchback', 'pre_post')
              AND measure = 'count' AND target_key LIKE 'campaign:%' AND completed_at > now() - interval '365 days'
            ORDER BY target_key, completed_at DESC`),
          (rows) => rows.map(({ age_days, ...row }) => ({ row, age_days }))
        )

      const zoneRow = decodeFirstRow(Schema.Struct({ time_zone: Schema.String }))
      const timeZoneOf = (profileId: string) =>
        Effect.map(
          zoneRow(sql`SELECT time_zone FROM profiles WHERE id = ${profileId}`),
          (row) => Option.match(row, { onNone: () => "UTC", onSome: (r) => r.time_zone })
        )

      return {
        ...atDatabaseBoundary({
          timeZoneOf,
          insert,
          find,
          list,
          runningOn,
          transition,
          runningHoldouts,
          recordHoldoutUpload,
          setExecution,
          dueSwitchbacks,
          calibrationSources
        }),
        transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
