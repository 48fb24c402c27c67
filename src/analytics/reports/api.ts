/**
 * Reports over HTTP (routes.tsv Reports, `reports:write`; decisions 0085, 0086): saved reports
 * listed and created, generated now, sent by email; each run's CSV and PDF downloaded (designed
 * routes beside the four of routes.tsv).
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AccountSuspended,
  AuthRevoked,
  InvalidDateRange,
  InvalidParameter,
  InvalidState,
  MailboxDisabled,
  profileErrors,
  QuotaExceeded,
  RateLimitExceeded,
  RecipientRejected,
  ServiceUnavailable,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import {
  CreateReport,
  CsvFile,
  PdfFile,
  ReportCreated,
  ReportPage,
  ReportParams,
  ReportRunCreated,
  ReportRunPage,
  ReportRunParams,
  ReportsQuery,
  SendReport
} from "../../../schema/reports.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const write = (idempotency: "optional" | "none") =>
  policy({ scopes: ["reports:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency })

const readErrors = [...profileErrors, InvalidParameter.wire, InvalidDateRange.wire] as const

export const ReportsApi = HttpApiGroup.make("reports")
  .add(
    HttpApiEndpoint.get("listReports", "/reports", { query: ReportsQuery, success: ReportPage, error: [...profileErrors, InvalidParameter.wire] })
      .annotate(OpenApi.Summary, "The profile's saved reports, oldest first, keyset-paged")
      .annotate(OpenApi.Description, "Each report with its reads, range, filters, schedule, recipients and `next_run_at` (the next scheduled slot, UTC).")
      .annotateMerge(write("none")),
    HttpApiEndpoint.post("createReport", "/reports", {
      payload: CreateReport,
      success: ReportCreated,
      error: [...profileErrors, ValidationError.wire, wireUnprocessable, InvalidState.wire]
    })
      .annotate(OpenApi.Summary, "Save a report: its analytics reads, range, filters, optional schedule and recipients")
      .annotate(
        OpenApi.Description,
        "`reads`: `overview`, `timeseries`, `breakdown:<dimension>`. `range`: `today`, `yesterday`, `last_7_days`, `last_30_days`, " +
          "`month_to_date`, `last_month` (resolved in the profile's time zone at each run) or `{start, end}`. `filters`: `model` and at " +
          "most one of `channel`, `campaign`, `ad_set`, `ad`, plus `conversion_key`. `schedule`: `{frequency: daily | weekly | monthly, " +
          "hour: 0-23, weekday (weekly), day_of_month 1-28 (monthly)}` in the profile's time zone; a scheduled report needs `recipients`. " +
          "A value that means nothing is 422 `validation_error` naming the field (`reason: invalid_field:<field>`); nothing is written."
      )
      .annotateMerge(write("optional")),
    HttpApiEndpoint.post("generateReport", "/reports/:id/generate", { params: ReportParams, success: ReportRunCreated, error: readErrors })
      .annotate(OpenApi.Summary, "Run the report's reads now: 201 with the run and its CSV and PDF download paths")
      .annotate(
        OpenApi.Description,
        "Runs the analytics reads the report names over its range (a relative range resolved in the profile's time zone now) and " +
          "keeps the CSV and the PDF on the run: `csv.url` and `pdf.url` download them. The figures are the analytics reads' own " +
          "(served from the rollups: see `meta.as_of` there). A read the parameters make invalid answers that read's error."
      )
      .annotateMerge(write("optional")),
    HttpApiEndpoint.post("sendReport", "/reports/:id/send", {
      params: ReportParams,
      payload: SendReport,
      success: ReportRunCreated,
      error: [
        ...readErrors,
        ValidationError.wire,
        wireUnprocessable,
        InvalidState.wire,
        AccountSuspended.wire,
        MailboxDisabled.wire,
        AuthRevoked.wire,
        QuotaExceeded.wire,
        RecipientRejected.wire,
        RateLimitExceeded.wire,
        ServiceUnavailable.wire
      ]
    })
      .annotate(OpenApi.Summary, "Email the report (CSV and PDF attached) through the profile's email connection")
      .annotate(
        OpenApi.Description,
        "Sends `run_id` (a generated run of this report) or a run generated now, to `recipients` or the report's own. Without a usable " +
          "email connection: 409 `invalid_state` with `reason: email_connection_required` (`reconnect_required: true` when it awaits a " +
          "reconnect). Mailbox refusals answer the email send codes. A run is sent once: sending a run already sent is 409 " +
          "`invalid_state` (`reason: run_not_sendable`). Retry safely with an `Idempotency-Key`."
      )
      .annotateMerge(write("optional")),
    HttpApiEndpoint.get("listReportRuns", "/reports/:id/runs", {
      params: ReportParams,
      query: ReportsQuery,
      success: ReportRunPage,
      error: [...profileErrors, InvalidParameter.wire]
    })
      .annotate(OpenApi.Summary, "A report's runs, newest first, keyset-paged: each with its status and CSV and PDF download paths")
      .annotate(
        OpenApi.Description,
        "Every run of the report, manual and scheduled (decision 0134): `csv` and `pdf` are null until the run has its files " +
          "(a run that failed before has none). Unknown or another profile's report: 404."
      )
      .annotateMerge(write("none")),
    HttpApiEndpoint.get("reportCsv", "/reports/:id/runs/:runId/csv", { params: ReportRunParams, success: CsvFile, error: profileErrors })
      .annotate(OpenApi.Summary, "A run's CSV (RFC 4180: section, key, metric, value; formula-like cells prefixed with ')")
      .annotate(
        OpenApi.Description,
        "`text/csv`, CRLF records `section,key,metric,value`: one record per figure of each read. A text cell starting with `=`, `+`, " +
          "`-`, `@`, tab or carriage return is prefixed with `'` so a spreadsheet never runs it. 404 for a run without files yet."
      )
      .annotateMerge(write("none")),
    HttpApiEndpoint.get("reportPdf", "/reports/:id/runs/:runId/pdf", { params: ReportRunParams, success: PdfFile, error: profileErrors })
      .annotate(OpenApi.Summary, "A run's PDF (the same tables)")
      .annotate(OpenApi.Description, "`application/pdf` (PDF 1.4, Helvetica, A4 landscape): the report's name and range, then one table per read. 404 for a run without files yet.")
      .annotateMerge(write("none"))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Reports")
