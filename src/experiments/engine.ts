/**
 * What the Experiment entity runs (cluster/Experiment.ts), one message at a time per experiment:
 * the transitions with their refusals, and the results read from the outcome series the
 * attribution context offers (decision 0122).
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { Experiment, ExperimentResults, StopReason } from "../../schema/experiments.ts"
import { type DatabaseUnavailable, InvalidState, NotFound } from "../../schema/errors.ts"
import { OutcomeSeries } from "../attribution/outcome-series/service.ts"
import { OutboxRepo } from "../kernel/outbox/repo.ts"
import type { PrincipalShape, ProfileContext } from "../kernel/principal.ts"
import { AdActions } from "../ads/actions/service.ts"
import { experimentCompletedEvent } from "./events.ts"
import {
  type Analysed,
  type CampaignSeries,
  type DayFigures,
  holdoutResults,
  incrementalRoas,
  PRE_POST_MODEL,
  prePostResults,
  switchbackResults,
  treatmentDays
} from "./analysis.ts"
import { AnalyticsImports } from "../analytics/imports/service.ts"
import { dateOf, dayNumber, localDate } from "./statistics/index.ts"
import { type Execution, type ExperimentRow, ExperimentsRepo, MAX_FAILURES, type Transition } from "./repo.ts"

export const render = (row: ExperimentRow): Experiment => ({
  id: row.id,
  kind: row.kind,
  name: row.name,
  status: row.status,
  status_reason: row.status_reason,
  status_note: row.status_note,
  metric: { conversion_key: row.conversion_key, measure: row.measure },
  window: { start: row.window_start, end: row.window_end },
  config: row.config,
  design: row.design,
  version: row.version,
  created_at: row.created_at,
  started_at: row.started_at,
  stopped_at: row.stopped_at,
  completed_at: row.completed_at,
  execution: row.kind !== "switchback" ? null : {
    pre_status: row.execution?.pre_status ?? null,
    // Every planned day beside what was applied for it (nothing yet: null fields).
    days: (row.config.schedule ?? []).map((day) => {
      const applied = row.execution?.applied.find((a) => a.date === day.date)
      return {
        date: day.date,
        planned: day.on ? "on" as const : "off" as const,
        applied_at: applied?.applied_at ?? null,
        action_id: applied?.action_id ?? null,
        outcome: applied?.outcome ?? null
      }
    }),
    restored: row.execution?.restored ?? null,
    failures: row.execution?.failures ?? []
  },
  exclusion: row.kind !== "audience_holdout" ? null : { uploads: row.holdout_uploads }
})

type Failure = NotFound | InvalidState | DatabaseUnavailable

/** Today in the profile's time zone: an experiment's days are its profile's local days (decision 0135). */
const today = (row: ExperimentRow) => Effect.map(Clock.currentTimeMillis, (ms) => localDate(ms, row.time_zone))

/** The local days `[start, end]` of the experiment's profile. */
const spanOf = (row: ExperimentRow, start: string, end: string) => ({ from: start, until: dateOf(dayNumber(end) + 1), timeZone: row.time_zone })

export class ExperimentEngine extends Context.Service<ExperimentEngine, {
  readonly read: (profileId: string, id: string) => Effect.Effect<Experiment, Failure>
  readonly start: (
    profileId: string,
    id: string,
    context: { readonly workspaceId: string; readonly attributionEnabled: boolean }
  ) => Effect.Effect<Experiment, Failure>
  readonly stop: (profileId: string, id: string, reason: StopReason, note: string | null) => Effect.Effect<Experiment, Failure>
  readonly results: (profileId: string, id: string) => Effect.Effect<ExperimentResults, Failure>
  /** A switchback's day tick: completion when due, then today's schedule day or the restore (each once). */
  readonly advance: (profileId: string, id: string) => Effect.Effect<void, Failure>
}>()("svc/ExperimentEngine") {
  static readonly layer = Layer.effect(ExperimentEngine)(
    Effect.gen(function*() {
      const repo = yield* ExperimentsRepo
      const series = yield* OutcomeSeries
      const outbox = yield* OutboxRepo
      const ads = yield* AdActions
      const spendOf = yield* AnalyticsImports

      const notFound = () => new NotFound({ message: "No experiment with this id on the profile." })
      const refuse = (reason: string, message: string) => new InvalidState({ message, reason })

      const find = Effect.fn("Experiments.find")(function*(profileId: string, id: string) {
        const row = yield* repo.find(profileId, id)
        if (Option.isNone(row)) return yield* notFound()
        return row.value
      })

      /**
       * A completion queues `experiment.completed` with its results in the same transaction: the
       * transition is conditional on the version, so only one completion (and one event) commits.
       */
      const transition = (row: ExperimentRow, change: Transition) =>
        change.status !== "completed"
          ? repo.transition(row.profile_id, row.id, row.version, change)
          : repo.transaction(Effect.gen(function*() {
            const moved = yield* repo.transition(row.profile_id, row.id, row.version, change)
            if (Option.isNone(moved)) return moved
            yield* outbox.insert([experimentCompletedEvent(moved.value, yield* resultsOf(moved.value))])
            return moved
          }))

      // --- A switchback's execution (decision 0124) -------------------------------------------

      /** The service acts for the experiment: the ad actions' audit rows name the operator. */
      const operator: PrincipalShape = { kind: "operator" }
      const contextOf = (row: ExperimentRow, execution: Execution): ProfileContext => ({
        profileId: row.profile_id,
        workspaceId: execution.workspace_id,
        attributionEnabled: execution.attribution_enabled
      })
      /** The schedule day in force on `date`: the window's first before it, its last after it. */
      const dayOf = (row: ExperimentRow, date: string) => {
        const clamped = date < row.window_start ? row.window_start : date > row.window_end ? row.window_end : date
        return (row.config.schedule ?? []).find((day) => day.date === clamped)
      }
      /**
       * An ad action of the execution; a refusal or an unreachable platform leaves the execution as
       * it was (logged), and the next day tick tries again.
       */
      const attempt = (row: ExperimentRow, what: "day" | "restore", effect: Effect.Effect<ExperimentRow, unknown>) =>
        Effect.catch(effect, (error) =>
          Effect.gen(function*() {
            const code = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : String(error)
            yield* Effect.logWarning("switchback: ad action not applied; the day tick retries", { experimentId: row.id, what, error: code })
            const execution = row.execution
            if (execution === null) return row
            // Kept in the execution so the experiment's read shows what did not happen and why.
            const now = new Date(yield* Clock.currentTimeMillis).toISOString()
            const date = what === "day" ? dayOf(row, localDate(Date.parse(now), row.time_zone))?.date ?? null : null
            const next: Execution = {
              ...execution,
              failures: [...(execution.failures ?? []), { what, date, error: code, at: now }].slice(-MAX_FAILURES)
            }
            yield* repo.setExecution(row.profile_id, row.id, next)
            return { ...row, execution: next }
          }))

      /** Today's schedule day through the target's entity, once: a day already recorded is not applied again. */
      const applyDay = (row: ExperimentRow) => {
        const execution = row.execution
        const target = row.config.target
        if (row.kind !== "switchback" || row.status !== "running" || execution === null || target === null) return Effect.succeed(row)
        return attempt(row, "day", Effect.gen(function*() {
          const day = dayOf(row, yield* today(row))
          if (day === undefined || execution.applied.some((applied) => applied.date === day.date)) return row
          const entry = yield* ads.setStatus(operator, contextOf(row, execution), {
            level: target.level,
            id: target.id,
            op: day.on ? "resume" : "pause"
          }, null)
          const next: Execution = {
            ...execution,
            pre_status: execution.pre_status ?? entry.pre_state.status,
            applied: [...execution.applied, {
              date: day.date,
              on: day.on,
              action_id: entry.action_id,
              outcome: entry.outcome,
              applied_at: new Date(yield* Clock.currentTimeMillis).toISOString()
            }]
          }
          yield* repo.setExecution(row.profile_id, row.id, next)
          return { ...row, execution: next }
        }))
      }

      /** On stop or completion: the target back to its status before the experiment, once. */
      const restore = (row: ExperimentRow) => {
        const execution = row.execution
        const target = row.config.target
        if (row.status !== "stopped" && row.status !== "completed") return Effect.succeed(row)
        if (execution === null || execution.restored !== null || target === null) return Effect.succeed(row)
        return attempt(row, "restore", Effect.gen(function*() {
          const pre = execution.pre_status
          const restored = pre === "active" || pre === "paused"
            ? yield* Effect.map(
              ads.setStatus(operator, contextOf(row, execution), { level: target.level, id: target.id, op: pre === "active" ? "resume" : "pause" }, null),
              (entry) => ({ action_id: entry.action_id, status: entry.status })
            )
            // Nothing was changed (or the target was neither active nor paused): nothing to undo.
            : { action_id: null, status: pre }
          const next: Execution = { ...execution, restored }
          yield* repo.setExecution(row.profile_id, row.id, next)
          return { ...row, execution: next }
        }))
      }

      const move = Effect.fn("Experiments.move")(function*(row: ExperimentRow, change: Transition) {
        const moved = yield* transition(row, change)
        if (Option.isSome(moved)) return yield* restore(moved.value)
        // Only another experiment running on the target stops a transition here (this entity orders the rest).
        const other = yield* repo.runningOn(row.profile_id, row.target_key, row.id)
        return yield* refuse(
          "overlapping_experiment",
          Option.isSome(other)
            ? `Experiment ${other.value} is already running on this target; stop it first.`
            : "The experiment changed meanwhile; read it again."
        )
      })

      /** A running experiment whose window is over is completed before anything else reads it. */
      const current = Effect.fn("Experiments.current")(function*(profileId: string, id: string) {
        const row = yield* find(profileId, id)
        if (row.status !== "running" || row.window_end >= (yield* today(row))) return row
        return yield* move(row, { status: "completed", reason: "window_ended", note: null })
      })

      const read = (profileId: string, id: string) => Effect.map(current(profileId, id), render)

      const start = Effect.fn("Experiments.start")(function*(
        profileId: string,
        id: string,
        context: { readonly workspaceId: string; readonly attributionEnabled: boolean }
      ) {
        const row = yield* current(profileId, id)
        if (row.status !== "draft") return yield* refuse("not_draft", `Only a draft starts; this experiment is ${row.status}.`)
        const started = yield* move(row, { status: "running", reason: "started", note: null })
        if (started.kind !== "switchback") return render(started)
        // The schedule's first day is applied at once; later days by the day tick.
        const execution: Execution = {
          workspace_id: context.workspaceId,
          attribution_enabled: context.attributionEnabled,
          pre_status: null,
          applied: [],
          restored: null
        }
        yield* repo.setExecution(profileId, started.id, execution)
        return render(yield* applyDay({ ...started, execution }))
      })

      const advance = Effect.fn("Experiments.advance")(function*(profileId: string, id: string) {
        const row = yield* current(profileId, id)
        yield* row.status === "running" ? applyDay(row) : restore(row)
      })

      const stop = Effect.fn("Experiments.stop")(function*(profileId: string, id: string, reason: StopReason, note: string | null) {
        const row = yield* current(profileId, id)
        if (row.status !== "running") return yield* refuse("not_running", `Only a running experiment stops; this one is ${row.status}.`)
        if (reason === "window_ended" && row.window_end >= (yield* today(row))) {
          return yield* refuse("window_not_ended", `The window runs until ${row.window_end}: stop early with early_stop or invalidated.`)
        }
        return render(yield* move(row, { status: reason === "window_ended" ? "completed" : "stopped", reason, note }))
      })

      const results = Effect.fn("Experiments.results")(function*(profileId: string, id: string) {
        const row = yield* current(profileId, id)
        if (row.status === "draft") return yield* refuse("experiment_draft", "A draft has no results: start it first.")
        return yield* resultsOf(row)
      })

      /** The results of a started experiment as of today (whole days only). */
      const resultsOf = Effect.fn("Experiments.resultsOf")(function*(row: ExperimentRow) {
        const profileId = row.profile_id
        const metric = { conversion_key: row.conversion_key, measure: row.measure }
        // Whole days only: up to yesterday while the window is still going, up to the day before a stop.
        const yesterday = dateOf(dayNumber(yield* today(row)) - 1)
        const lastDay = row.status === "stopped" && row.stopped_at !== null
          ? dateOf(dayNumber(localDate(Date.parse(row.stopped_at), row.time_zone)) - 1)
          : yesterday
        const end = [row.window_end, yesterday, lastDay].reduce((a, b) => (a < b ? a : b))
        const analysed: Analysed = { start: row.window_start, end: end < row.window_start ? row.window_start : end }
        const header = {
          experiment_id: row.id,
          kind: row.kind,
          status: row.status,
          metric,
          window: { start: row.window_start, end: row.window_end },
          analysed
        }
        // No whole day of the window yet: nothing to compare (zeros would read as a lift of minus everything).
        if (end < row.window_start) {
          const none = { size: 0, conversions: 0, value: 0 }
          return {
            ...header,
            method: "none: no whole day of the window has passed",
            treatment: none,
            control: none,
            absolute_lift: null,
            relative_lift: null,
            incremental_conversions: null,
            incremental_value: null,
            insufficient_data: { reason: "no whole day of the window has passed yet" },
            checks: [],
            failed_checks: [],
            fit: null,
            spend: null,
            incremental_roas: null,
            incremental_roas_unavailable: { reason: "insufficient_data" }
          } satisfies ExperimentResults
        }
        const core = yield* Effect.gen(function*() {
          if (row.kind === "audience_holdout") {
            const members = yield* series.listMembers(profileId, row.window_start, row.time_zone)
            const outcomes = yield* series.perCustomer(profileId, row.conversion_key, spanOf(row, analysed.start, analysed.end))
            return holdoutResults(
              metric,
              row.config.holdout_fraction ?? 0,
              row.salt,
              members,
              new Map(outcomes.map((o) => [o.customer_id, o]))
            )
          }
          if (row.kind === "switchback") {
            const days = yield* series.perDay(profileId, row.conversion_key, spanOf(row, analysed.start, analysed.end))
            return switchbackResults(metric, row.config.schedule ?? [], analysed, new Map(days.map((d) => [d.day, d])))
          }
          const preDays = row.config.pre_days ?? 28
          const cells = yield* series.creditedPerCampaignDay(
            profileId,
            row.conversion_key,
            PRE_POST_MODEL,
            spanOf(row, dateOf(dayNumber(analysed.start) - preDays), analysed.end)
          )
          const byCampaign = new Map<string, Map<string, DayFigures>>()
          for (const cell of cells) {
            const days = byCampaign.get(cell.campaign_id) ?? new Map<string, DayFigures>()
            days.set(cell.day, cell)
            byCampaign.set(cell.campaign_id, days)
          }
          const all: ReadonlyArray<CampaignSeries> = [...byCampaign.entries()].map(([campaignId, byDay]) => ({ campaignId, byDay }))
          return prePostResults(metric, row.config.target?.id ?? "", preDays, analysed, all)
        })
        // The spend of the campaign the treatment ran on: the target, or a holdout's named spend target.
        const spendTarget = row.kind === "audience_holdout" ? row.config.spend_target ?? null : row.config.target
        const treatment = treatmentDays(row.kind, row.config, analysed)
        const spend = spendTarget === null ? null : yield* spendOf.targetSpend(profileId, spendTarget.level, spendTarget.id, treatment)
        const roas = row.measure === "count"
          ? { ...incrementalRoas(null, treatment, spend), incremental_roas_unavailable: { reason: "metric_is_count" as const } }
          : incrementalRoas(core.incremental_value, treatment, spend)
        return { ...header, ...core, ...roas } satisfies ExperimentResults
      })

      return { read, start, stop, results, advance }
    })
  ).pipe(Layer.provide([ExperimentsRepo.layer, OutcomeSeries.layer, OutboxRepo.layer, AdActions.layer, AnalyticsImports.layer]))
}
