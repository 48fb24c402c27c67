/** Provider sync jobs of a profile's connections: triggering a sync and reading its progress (decision 0058). */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Page, PageQuery, Uuid } from "./common.ts"

export const SyncJobKind = Schema.Literals(["backfill", "structure", "insights", "manual"])
export type SyncJobKind = typeof SyncJobKind.Type

export const SyncJobStatus = Schema.Literals(["queued", "running", "done", "failed", "cancelled"])
export type SyncJobStatus = typeof SyncJobStatus.Type

/** What a job has written so far (in its current attempt); a phase not reached yet reads 0. */
export const SyncProgress = Schema.Struct({
  /** `structure`, `insights` or null before the first page. */
  phase: Schema.NullOr(Schema.Literals(["structure", "insights"])),
  campaigns: Schema.Int,
  ad_sets: Schema.Int,
  ads: Schema.Int,
  insight_rows: Schema.Int,
  /** The insights window (YYYY-MM-DD, inclusive), null for a structure-only job. */
  since: Schema.NullOr(Schema.String),
  until: Schema.NullOr(Schema.String),
  /** Why insights were not synced (`attribution_disabled`), null otherwise. */
  insights_skipped: Schema.NullOr(Schema.String),
  /** A commerce sync: products and orders copied, `order.status.changed` milestones written (each once: a re-read writes none). */
  products: Schema.Int,
  orders: Schema.Int,
  milestones: Schema.Int,
  /** A CRM sync: deals read. */
  deals: Schema.Int,
  /** A card-gateway sync: payments recorded. */
  payments: Schema.Int
}).annotate({ identifier: "SyncProgress" })
export type SyncProgress = typeof SyncProgress.Type

export const SyncJob = Schema.Struct({
  job_id: Schema.String,
  connection_id: Schema.String,
  /** `structure`: campaigns, ad sets, ads; `insights`: recent days of spend and metrics; `backfill`: the standard window; `manual`: both. */
  kind: SyncJobKind,
  status: SyncJobStatus,
  reason: Schema.NullOr(Schema.String),
  window_days: Schema.NullOr(Schema.Int),
  attempts: Schema.Int,
  progress: SyncProgress,
  /** A short code: `reconnect_required`, `permission_missing`, `provider_refused`, `attribution_disabled`, ... */
  error: Schema.NullOr(Schema.String),
  /** When a queued job is next tried (after a throttle or an outage). */
  run_after: Schema.String,
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "SyncJob" })
export type SyncJob = typeof SyncJob.Type

export const SyncRequest = Schema.Struct({
  /** One connection of the profile; without it, every live connection that syncs. */
  connection_id: Schema.optionalKey(Uuid),
  /** Default `manual` (structure, then the recent insights while the attribution add-on is on). */
  kind: Schema.optionalKey(Schema.Literals(["structure", "insights", "manual"]))
}).annotate({ identifier: "SyncRequest" })
export type SyncRequest = typeof SyncRequest.Type

/** 202: the jobs are queued; their progress is readable at `GET /api/v1/connections/sync/{job_id}`. */
export const SyncQueued = Schema.Struct({
  /** The jobs queued, or the ones already queued or running that this request joined. */
  data: Schema.Array(SyncJob)
}).annotate({ identifier: "SyncQueued" }).pipe(HttpApiSchema.status(202))

export const SyncJobBody = Schema.Struct({ data: SyncJob }).annotate({ identifier: "SyncJobBody" })
export type SyncQueued = typeof SyncQueued.Type

export const SyncJobParams = { job_id: Schema.String.annotate({ description: "The job id `POST /api/v1/connections/sync` answered." }) }

/** `GET /api/v1/connections/sync`: the profile's sync jobs, newest first. */
export const SyncJobsQuery = {
  ...PageQuery,
  connection_id: Schema.optionalKey(Uuid.annotate({ description: "Only this connection's jobs" }))
}

export const SyncJobPage = Page(SyncJob)
export type SyncJobPage = typeof SyncJobPage.Type
