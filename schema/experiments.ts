/**
 * Experiments (issue 32, decision 0122): the wire contract of `/api/v1/experiments`. Every lift
 * is an interval or an explicit `insufficient_data`; every answer names its method.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Page, PageQuery } from "./common.ts"
import { CALENDAR_DATE_PATTERN } from "./dates.ts"

export const ExperimentKind = Schema.Literals(["audience_holdout", "switchback", "pre_post"])
export type ExperimentKind = typeof ExperimentKind.Type

export const ExperimentStatus = Schema.Literals(["draft", "running", "completed", "stopped"])
export type ExperimentStatus = typeof ExperimentStatus.Type

/** Why a running experiment ends: `window_ended` completes it, the others stop it. */
export const StopReason = Schema.Literals(["window_ended", "early_stop", "invalidated"])
export type StopReason = typeof StopReason.Type

const CalendarDay = Schema.String.annotate({ description: "A calendar day of the profile's time zone, YYYY-MM-DD", format: "date" }).check(
  Schema.isPattern(new RegExp(CALENDAR_DATE_PATTERN, "u"), { expected: "a real calendar day (YYYY-MM-DD)" })
)

export const Metric = Schema.Struct({
  /** The conversion key whose outcomes are compared (for example `purchase`). */
  conversion_key: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)),
  /** `count`: conversions; `value`: their value. */
  measure: Schema.Literals(["count", "value"])
})
export type Metric = typeof Metric.Type

export const Window = Schema.Struct({
  /** First day, inclusive (the profile's time zone, decision 0135). */
  start: CalendarDay,
  /** Last day, inclusive (the profile's time zone). */
  end: CalendarDay
})
export type Window = typeof Window.Type

export const Target = Schema.Struct({
  level: Schema.Literals(["campaign", "ad_set"]),
  /** The ad platform's id. */
  id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100))
})
export type Target = typeof Target.Type

/** What a design is asked for: the smallest effect worth detecting, at what confidence and power. */
export const DesignAsk = Schema.Struct({
  /** Relative (0.1 = +10 %) unless `effect_kind` is `absolute` (in the metric's unit per customer or per day). */
  minimum_detectable_effect: Schema.Finite.check(Schema.isGreaterThan(0)),
  effect_kind: Schema.optionalKey(Schema.Literals(["relative", "absolute"])),
  /** Default 0.95. */
  confidence: Schema.optionalKey(Schema.Finite.check(Schema.isBetween({ minimum: 0.8, maximum: 0.99 }))),
  /** Default 0.8. */
  power: Schema.optionalKey(Schema.Finite.check(Schema.isBetween({ minimum: 0.5, maximum: 0.99 })))
})
export type DesignAsk = typeof DesignAsk.Type

export const CreateExperiment = Schema.Struct({
  name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)),
  kind: ExperimentKind,
  metric: Metric,
  window: Window,
  /** audience_holdout only (required there): the share of the customer list held out, 0.01 to 0.5. */
  holdout_fraction: Schema.optionalKey(Schema.Finite.check(Schema.isBetween({ minimum: 0.01, maximum: 0.5 }))),
  /** switchback and pre_post (required there); pre_post takes a campaign. */
  target: Schema.optionalKey(Target),
  /** pre_post: days before the window fitted (default 28, 14 to 180). */
  pre_days: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 14, maximum: 180 }))),
  /**
   * audience_holdout only, optional: the campaign (or ad set) delivering to the uploaded audience.
   * Its spend over the window makes the results' `incremental_roas`; without it there is none.
   */
  spend_target: Schema.optionalKey(Target),
  /** When given, the design is computed and stored; a window that cannot reach it is accepted with a warning. */
  design: Schema.optionalKey(DesignAsk)
})
export type CreateExperiment = typeof CreateExperiment.Type

export const StopExperiment = Schema.Struct({
  reason: StopReason,
  note: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(500)))
})
export type StopExperiment = typeof StopExperiment.Type

export const ScheduleDay = Schema.Struct({ date: Schema.String, on: Schema.Boolean })
export type ScheduleDay = typeof ScheduleDay.Type

export const ExperimentConfig = Schema.Struct({
  holdout_fraction: Schema.NullOr(Schema.Finite),
  target: Schema.NullOr(Target),
  pre_days: Schema.NullOr(Schema.Int),
  /** switchback: every day of the window, on (delivering) or off (paused). */
  schedule: Schema.NullOr(Schema.Array(ScheduleDay)),
  /** audience_holdout: the campaign delivering to the audience, whose spend gives `incremental_roas` (absent when not named). */
  spend_target: Schema.optionalKey(Schema.NullOr(Target))
})
export type ExperimentConfig = typeof ExperimentConfig.Type

export const SampleSizeWire = Schema.Struct({ treatment: Schema.Int, control: Schema.Int, total: Schema.Int })

export const Design = Schema.Struct({
  kind: ExperimentKind,
  metric: Metric,
  method: Schema.String,
  minimum_detectable_effect: Schema.Finite,
  effect_kind: Schema.Literals(["relative", "absolute"]),
  confidence: Schema.Finite,
  power: Schema.Finite,
  history_days: Schema.Int,
  /** What the history says of the metric: per customer (holdout) or per day (switchback, pre_post). */
  baseline: Schema.Struct({
    customers: Schema.NullOr(Schema.Int),
    conversion_rate: Schema.NullOr(Schema.Finite),
    mean: Schema.NullOr(Schema.Finite),
    sd: Schema.NullOr(Schema.Finite)
  }),
  /** holdout: customers per group; switchback and pre_post: days. Null when the history cannot say. */
  required_sample: Schema.NullOr(SampleSizeWire),
  required_days: Schema.NullOr(Schema.Int),
  window_days: Schema.NullOr(Schema.Int),
  /**
   * pre_post: the in-time placebos it rests on: fits of `pre_days` days over the history, the
   * campaigns used as donors, the placebo windows at the required length and the root mean square
   * error of a post total of that length (`total_error`, null when none reaches the power).
   */
  placebo: Schema.optionalKey(Schema.Struct({
    pre_days: Schema.Int,
    donors: Schema.Int,
    windows: Schema.Int,
    longest_measured_days: Schema.Int,
    total_error: Schema.NullOr(Schema.Finite)
  })),
  /** `no_history`, `window_too_short`, `list_too_small`, `history_too_short` (pre_post: the history measures no post window long enough). */
  warnings: Schema.Array(Schema.String)
})
export type Design = typeof Design.Type

export const DesignRequest = Schema.Struct({
  kind: ExperimentKind,
  metric: Metric,
  ...DesignAsk.fields,
  holdout_fraction: Schema.optionalKey(Schema.Finite.check(Schema.isBetween({ minimum: 0.01, maximum: 0.5 }))),
  /** When given, the answer warns when it cannot reach the design. */
  window: Schema.optionalKey(Window),
  /** Days of history read (default 28, 7 to 365; pre_post default 180). */
  history_days: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 7, maximum: 365 }))),
  /** pre_post (required there): the campaign whose change is measured. */
  target: Schema.optionalKey(Target),
  /** pre_post: days each fit reads (default 28, 14 to 180), as the experiment's `pre_days`. */
  pre_days: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 14, maximum: 180 })))
})
export type DesignRequest = typeof DesignRequest.Type

export const Experiment = Schema.Struct({
  id: Schema.String,
  kind: ExperimentKind,
  name: Schema.String,
  status: ExperimentStatus,
  status_reason: Schema.NullOr(Schema.String),
  status_note: Schema.NullOr(Schema.String),
  metric: Metric,
  window: Window,
  config: ExperimentConfig,
  design: Schema.NullOr(Design),
  version: Schema.Int,
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  stopped_at: Schema.NullOr(Schema.String),
  completed_at: Schema.NullOr(Schema.String),
  /**
   * switchback (null otherwise): what the service did to the target. `pre_status` its status
   * before the first action; per schedule day the plan (`on`: resumed, `off`: paused) and, once
   * applied, when and by which ad action (`action_id`, the ad-action ledger's id, its `outcome`);
   * `restored` the restore on stop or completion; `failures` the ad actions refused or failed
   * (the day tick retries them), the latest 20.
   */
  execution: Schema.NullOr(Schema.Struct({
    pre_status: Schema.NullOr(Schema.String),
    days: Schema.Array(Schema.Struct({
      date: Schema.String,
      planned: Schema.Literals(["on", "off"]),
      applied_at: Schema.NullOr(Schema.String),
      action_id: Schema.NullOr(Schema.String),
      outcome: Schema.NullOr(Schema.String)
    })),
    restored: Schema.NullOr(Schema.Struct({ action_id: Schema.NullOr(Schema.String), status: Schema.NullOr(Schema.String) })),
    failures: Schema.Array(Schema.Struct({
      what: Schema.Literals(["day", "restore"]),
      date: Schema.NullOr(Schema.String),
      error: Schema.String,
      at: Schema.String
    }))
  })),
  /**
   * audience_holdout (null otherwise): the customer-list uploads made while it ran, each leaving
   * its `held_out` customers out of `platform_audience_id` (the latest 50).
   */
  exclusion: Schema.NullOr(Schema.Struct({
    uploads: Schema.Array(Schema.Struct({ uploaded_at: Schema.String, platform_audience_id: Schema.NullOr(Schema.String), held_out: Schema.Int }))
  }))
})
export type Experiment = typeof Experiment.Type

export const ExperimentBody = Schema.Struct({ data: Experiment })
export const ExperimentCreated = ExperimentBody.pipe(HttpApiSchema.status(201))
export const ExperimentPage = Page(Experiment)
export const ExperimentsQuery = PageQuery
export type ExperimentsQuery = Schema.Struct.Type<typeof ExperimentsQuery>
export const ExperimentIdParams = Schema.Struct({ id: Schema.String.annotate({ description: "The experiment's id" }) })
export const DesignBody = Schema.Struct({ data: Design })

export const IntervalWire = Schema.Struct({
  estimate: Schema.Finite,
  lower: Schema.Finite,
  upper: Schema.Finite,
  level: Schema.Finite
})
export type IntervalWire = typeof IntervalWire.Type

export const GroupFigures = Schema.Struct({
  /** Customers (holdout) or days (switchback, pre_post). */
  size: Schema.Int,
  conversions: Schema.Finite,
  value: Schema.Finite
})

export const Check = Schema.Struct({
  name: Schema.Literals(["sample_ratio_mismatch", "too_few_outcomes", "pre_period_fit"]),
  passed: Schema.Boolean,
  detail: Schema.String
})
export type Check = typeof Check.Type

export const RoasUnavailableReason = Schema.Literals([
  "no_spend_target",
  "spend_unknown",
  "fx_rate_missing",
  "no_spend_in_treatment",
  "metric_is_count",
  "insufficient_data"
])
export type RoasUnavailableReason = typeof RoasUnavailableReason.Type

export const ExperimentResults = Schema.Struct({
  experiment_id: Schema.String,
  kind: ExperimentKind,
  status: ExperimentStatus,
  metric: Metric,
  window: Window,
  /** The days read: the window up to today (a running experiment's results are interim). */
  analysed: Window,
  method: Schema.String,
  /** Holdout: exposed customers and held-out customers; switchback: on and off days; pre_post: post days and their counterfactual. */
  treatment: GroupFigures,
  control: GroupFigures,
  /** Treatment minus control in the metric's unit (per customer, or per day). Null exactly when `insufficient_data` is set. */
  absolute_lift: Schema.NullOr(IntervalWire),
  relative_lift: Schema.NullOr(IntervalWire),
  /** Conversions the treatment added over the analysed period (measure `count`). */
  incremental_conversions: Schema.NullOr(IntervalWire),
  /** Value the treatment added over the analysed period (measure `value`). */
  incremental_value: Schema.NullOr(IntervalWire),
  insufficient_data: Schema.NullOr(Schema.Struct({ reason: Schema.String })),
  checks: Schema.Array(Check),
  failed_checks: Schema.Array(Schema.String),
  /** pre_post: the pre-period fit. */
  fit: Schema.NullOr(Schema.Struct({ r_squared: Schema.Finite, rmspe: Schema.Finite, pre_days: Schema.Int, donors: Schema.Int })),
  /**
   * The target's ad spend on the treatment days (switchback: the analysed on days; pre_post: the
   * analysed post days; audience_holdout: the analysed days of its `spend_target`), in the
   * profile's currency (`currency`, null when the profile has none), from the imported or synced
   * daily spend (the profile's calendar days, the experiment's days too: decision 0135). Null when
   * it is not known.
   */
  spend: Schema.NullOr(Schema.Struct({ amount: Schema.Finite, currency: Schema.NullOr(Schema.String), days: Schema.Int })),
  /**
   * Incremental value over `spend` (measure `value`): the interval is `incremental_value`'s bounds
   * over the spend (spend taken as exact). Null exactly when `incremental_roas_unavailable` is set.
   */
  incremental_roas: Schema.NullOr(IntervalWire),
  /**
   * Why there is no incremental ROAS: `no_spend_target` (a holdout without `spend_target`),
   * `spend_unknown` (no spend row for the target), `fx_rate_missing` (a day's spend could not be
   * converted), `no_spend_in_treatment` (zero spend on the treatment days), `metric_is_count` (no
   * value to divide), `insufficient_data` (no value lift interval).
   */
  incremental_roas_unavailable: Schema.NullOr(Schema.Struct({ reason: RoasUnavailableReason }))
})
export type ExperimentResults = typeof ExperimentResults.Type
export const ExperimentResultsBody = Schema.Struct({ data: ExperimentResults })
