/**
 * Calibration beside credit (issue 32, decision 0124): for each campaign with a completed
 * switchback or pre/post (a count metric), the experiment's measured incremental conversions over
 * the conversions the requested model credited to the campaign in the same analysed days. What
 * analytics' `Calibrations` port answers (wired in src/main/ports.ts).
 */
import { Context, Effect, Layer } from "effect"
import type { CalibrationFactor } from "../../schema/analytics.ts"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { OutcomeSeries } from "../attribution/outcome-series/service.ts"
import type { ProfileContext } from "../kernel/principal.ts"
import { type ExperimentRow, ExperimentsRepo } from "./repo.ts"
import { ExperimentReads } from "./service.ts"
import { dateOf, dayNumber } from "./statistics/index.ts"

/** Up to this many days after completion a factor is fresh; after it, flagged `stale` (dropped after 365). */
export const FRESH_DAYS = 90

export class ExperimentCalibrations extends Context.Service<ExperimentCalibrations, {
  readonly factors: (profile: ProfileContext, model: string) => Effect.Effect<ReadonlyArray<CalibrationFactor>, DatabaseUnavailable>
}>()("svc/ExperimentCalibrations") {
  static readonly layer = Layer.effect(ExperimentCalibrations)(
    Effect.gen(function*() {
      const repo = yield* ExperimentsRepo
      const reads = yield* ExperimentReads
      const series = yield* OutcomeSeries

      const factorOf = Effect.fn("ExperimentCalibrations.factorOf")(function*(
        profile: ProfileContext,
        model: string,
        source: { readonly row: ExperimentRow; readonly age_days: number }
      ) {
        const { row, age_days } = source
        const target = row.config.target
        if (target === null || target.level !== "campaign" || row.completed_at === null || (row.kind !== "switchback" && row.kind !== "pre_post")) {
          return null
        }
        // Through the entity, as every results read: ordered with the experiment's other messages.
        const results = yield* reads.results(profile, row.id).pipe(
          Effect.catchTags({ NotFound: () => Effect.succeed(null), InvalidState: () => Effect.succeed(null), ServiceUnavailable: () => Effect.succeed(null) })
        )
        const incremental = results?.incremental_conversions ?? null
        if (results === null || incremental === null) return null
        // The experiment's analysed local days, as the results read them (decision 0135).
        const span = { from: results.analysed.start, until: dateOf(dayNumber(results.analysed.end) + 1), timeZone: row.time_zone }
        const cells = yield* series.creditedPerCampaignDay(profile.profileId, row.conversion_key, model, span)
        const credited = cells.filter((cell) => cell.campaign_id === target.id).reduce((sum, cell) => sum + cell.conversions, 0)
        return {
          campaign: target.id,
          experiment_id: row.id,
          kind: row.kind,
          conversion_key: row.conversion_key,
          analysed: results.analysed,
          completed_at: row.completed_at,
          age_days,
          stale: age_days > FRESH_DAYS,
          credited_conversions: credited,
          incremental_conversions: incremental,
          incrementality_factor: credited > 0
            ? { estimate: incremental.estimate / credited, lower: incremental.lower / credited, upper: incremental.upper / credited, level: incremental.level }
            : null
        } satisfies CalibrationFactor
      })

      return {
        factors: Effect.fn("ExperimentCalibrations.factors")(function*(profile: ProfileContext, model: string) {
          const sources = yield* repo.calibrationSources(profile.profileId)
          const factors = yield* Effect.forEach(sources, (source) => factorOf(profile, model, source))
          return factors.filter((factor): factor is CalibrationFactor => factor !== null)
        })
      }
    })
  ).pipe(Layer.provide([ExperimentsRepo.layer, OutcomeSeries.layer, ExperimentReads.layer]))
}
