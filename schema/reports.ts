/**
 * Saved reports (routes.tsv Reports, `reports:write`; decisions 0085, 0086): which analytics
 * reads a report runs, over which range and filters, an optional schedule and its recipients;
 * each run's CSV and PDF, downloadable.
 *
 * The body's shapes are checked by the contract (400 `validation_error`); what a value means
 * (a read, a range, a time, an address) is checked by the service: 422 `validation_error`
 * naming the field, nothing written.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { BREAKDOWN_DIMENSIONS } from "./analytics.ts"
import { Page, PageQuery } from "./common.ts"
import { CreditModels } from "./events.ts"
import { UuidParam } from "./query.ts"

/** The analytics reads a report can run: the overview, the daily timeseries, a breakdown per dimension. */
export const REPORT_READS = ["overview", "timeseries", ...BREAKDOWN_DIMENSIONS.map((d) => `breakdown:${d}` as const)] as const
export type ReportRead = typeof REPORT_READS[number]

/** Ranges relative to the profile's today (in its time zone), resolved at each run. */
export const RELATIVE_RANGES = ["today", "yesterday", "last_7_days", "last_30_days", "month_to_date", "last_month"] as const
export type RelativeRange = typeof RELATIVE_RANGES[number]

export const FREQUENCIES = ["daily", "weekly", "monthly"] as const
export const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"] as const
export type Weekday = typeof WEEKDAYS[number]

/** At most this many recipients per report, and this many saved reports per profile. */
export const MAX_RECIPIENTS = 20
export const MAX_REPORTS_PER_PROFILE = 200

const AbsoluteRange = Schema.Struct({
  start: Schema.String.annotate({ description: "YYYY-MM-DD, first day (the profile's time zone)" }),
  end: Schema.String.annotate({ description: "YYYY-MM-DD, last day, inclusive" })
})

export const ReportRange = Schema.Union([
  Schema.String.annotate({ description: `One of ${RELATIVE_RANGES.join(", ")}` }),
  AbsoluteRange
])

export const ReportFilters = Schema.Struct({
  model: Schema.optionalKey(Schema.String.annotate({ description: `Credit model: ${CreditModels.join(", ")} (default last_touch)` })),
  channel: Schema.optionalKey(Schema.String),
  campaign: Schema.optionalKey(Schema.String.annotate({ description: "The ad platform's campaign id" })),
  ad_set: Schema.optionalKey(Schema.String),
  ad: Schema.optionalKey(Schema.String),
  conversion_key: Schema.optionalKey(Schema.String)
}).annotate({ description: "The analytics reads' filters: a model, at most one of channel, campaign, ad_set, ad, and a conversion_key" })

export const ReportSchedule = Schema.Struct({
  frequency: Schema.String.annotate({ description: `One of ${FREQUENCIES.join(", ")}` }),
  hour: Schema.Int.annotate({ description: "0 to 23, in the profile's time zone" }),
  weekday: Schema.optionalKey(Schema.String.annotate({ description: `Weekly only (required): ${WEEKDAYS.join(", ")}` })),
  day_of_month: Schema.optionalKey(Schema.Int.annotate({ description: "Monthly only: 1 to 28 (default 1)" }))
})

export const CreateReport = Schema.Struct({
  name: Schema.String.annotate({ description: "1 to 200 characters" }),
  reads: Schema.Array(Schema.String).annotate({ description: `One or more of ${REPORT_READS.join(", ")}, each once` }),
  range: ReportRange,
  filters: Schema.optionalKey(ReportFilters),
  schedule: Schema.optionalKey(Schema.NullOr(ReportSchedule)),
  recipients: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: `Email addresses, at most ${MAX_RECIPIENTS}; required with a schedule` }))
})
export type CreateReport = typeof CreateReport.Type

/** A schedule as stored and answered: the weekday or day of month only where it applies. */
export const StoredSchedule = Schema.Struct({
  frequency: Schema.Literals(FREQUENCIES),
  hour: Schema.Int,
  weekday: Schema.NullOr(Schema.Literals(WEEKDAYS)),
  day_of_month: Schema.NullOr(Schema.Int)
})
export type StoredSchedule = typeof StoredSchedule.Type

export const StoredFilters = Schema.Struct({
  model: Schema.Literals(CreditModels),
  channel: Schema.NullOr(Schema.String),
  campaign: Schema.NullOr(Schema.String),
  ad_set: Schema.NullOr(Schema.String),
  ad: Schema.NullOr(Schema.String),
  conversion_key: Schema.NullOr(Schema.String)
})
export type StoredFilters = typeof StoredFilters.Type

export const StoredRange = Schema.Union([Schema.Literals(RELATIVE_RANGES), AbsoluteRange])
export type StoredRange = typeof StoredRange.Type

export const Report = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  name: Schema.String,
  reads: Schema.Array(Schema.Literals(REPORT_READS)),
  range: StoredRange,
  filters: StoredFilters,
  schedule: Schema.NullOr(StoredSchedule),
  recipients: Schema.Array(Schema.String),
  /** The next scheduled slot (ISO 8601 UTC), null without a schedule. */
  next_run_at: Schema.NullOr(Schema.String),
  created_at: Schema.String
}).annotate({ identifier: "Report" })
export type Report = typeof Report.Type

export const ReportCreated = Schema.Struct({ data: Report }).pipe(HttpApiSchema.status(201))
export const ReportPage = Page(Report)
export const ReportsQuery = { ...PageQuery }

const Artifact = Schema.Struct({
  content_type: Schema.String,
  bytes: Schema.Int,
  /** Path of the download route (same credential). */
  url: Schema.String
})

export const RUN_STATUSES = ["pending", "running", "generated", "sending", "sent", "failed"] as const

export const ReportRun = Schema.Struct({
  id: Schema.String,
  report_id: Schema.String,
  trigger: Schema.Literals(["manual", "scheduled"]),
  /** The scheduled slot (ISO 8601 UTC) a scheduled run is for. */
  slot: Schema.NullOr(Schema.String),
  status: Schema.Literals(RUN_STATUSES),
  range: Schema.NullOr(Schema.Struct({ start: Schema.String, end: Schema.String })),
  csv: Schema.NullOr(Artifact),
  pdf: Schema.NullOr(Artifact),
  recipients: Schema.NullOr(Schema.Array(Schema.String)),
  /** The email provider's message id once sent. */
  message_id: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  generated_at: Schema.NullOr(Schema.String),
  sent_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "ReportRun" })
export type ReportRun = typeof ReportRun.Type

export const ReportRunCreated = Schema.Struct({ data: ReportRun }).pipe(HttpApiSchema.status(201))
export const ReportRunBody = Schema.Struct({ data: ReportRun })
export const ReportRunPage = Page(ReportRun)

export const ReportParams = { id: UuidParam("The report's id") }
export const ReportRunParams = { id: UuidParam("The report's id"), runId: UuidParam("The run's id") }

export const SendReport = Schema.Struct({
  run_id: Schema.optionalKey(Schema.String.annotate({ description: "A generated run of this report to send; default: a new run generated now" })),
  recipients: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: "Instead of the report's recipients (at most 20)" }))
})
export type SendReport = typeof SendReport.Type

export const CsvFile = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/csv; charset=utf-8" }))
export const PdfFile = Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "application/pdf" }))
