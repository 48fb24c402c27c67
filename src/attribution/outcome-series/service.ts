/**
 * Conversion series for experiments (issue 32): what src/experiments reads of the outcomes the
 * attribution context holds, so it never touches these tables itself.
 */
import { Context, Effect, Layer } from "effect"
import { OutcomeSeriesRepo } from "./repo.ts"

export type { CampaignDayOutcome, CustomerOutcome, DayOutcome, Span } from "./repo.ts"

export class OutcomeSeries extends Context.Service<OutcomeSeries, OutcomeSeriesRepo["Service"]>()("svc/OutcomeSeries") {
  static readonly layer = Layer.effect(OutcomeSeries)(Effect.gen(function*() {
    return yield* OutcomeSeriesRepo
  })).pipe(Layer.provide(OutcomeSeriesRepo.layer))
}
