/**
 * The RPC contract for internal services: what `/rpc` answers (src/rpc/server.ts) and what
 * `makeServiceClient` (src/rpc/client.ts) calls. Schemas only, no I/O.
 *
 * Every call carries the RPC header `authorization: Bearer <credential>` (decision 0081): an
 * internal-service credential the operator minted (`svc_rpc_...`), checked per call with the
 * scope rules, rate limit and PII access log of HTTP; each profile call names its `profile_id`.
 * The deprecated `SVC_RPC_TOKEN` still opens the three cluster calls for one release.
 * Errors are the HTTP catalogue's tagged errors (schema/errors.ts), the same code for the same
 * refusal.
 */
import { Context, Schema } from "effect"
import { Rpc, RpcGroup, RpcMiddleware } from "effect/rpc"
import { AnalyticsQuery, Overview, OverviewQuery, Timeseries } from "./analytics.ts"
import { Campaigns, CampaignsListQuery } from "./analytics-campaigns.ts"
import { RecomputeAccepted, ReplayStatusBody } from "./attribution.ts"
import {
  ConversionJourney,
  CreateErasure,
  CustomerPage,
  CustomersQuery,
  ErasureAnswer,
  JourneyPageQuery,
  PersonJourney,
  PersonJourneyQuery
} from "./customers.ts"
import {
  ApiKeyRequired,
  ConversionNotFound,
  CustomerNotFound,
  DatabaseUnavailable,
  EntitlementRequired,
  HealthcareScopeForbidden,
  IdempotencyKeyConflict,
  InsufficientScope,
  InvalidDateRange,
  InvalidParameter,
  InvalidState,
  NotFound,
  PayloadTooLarge,
  RateLimitExceeded,
  ServiceUnavailable,
  Unauthorized,
  ValidationError
} from "./errors.ts"
import {
  ConversionPage,
  ConversionsQuery,
  IngestedEvent,
  IngestEvent,
  MAX_REPLAY_PAGE,
  OutcomeRecordedEvent
} from "./events.ts"
import { ExperimentResultsBody } from "./experiments.ts"
import { EntitlementBody, SetEntitlement } from "./tenancy.ts"
import { CollectEvent } from "./tracking.ts"

export { DatabaseUnavailable, ServiceUnavailable }

/** A profile id: a UUID (any version). The server lower-cases it before routing. */
export const ProfileId = Schema.String.check(Schema.isUUID())

/**
 * The Profile entity's state as a caller sees it. A profile never written has
 * `revocation_epoch: 0` and `updated_at: null` (reading does not create a row).
 */
export const ProfileState = Schema.Struct({
  profile_id: Schema.String,
  revocation_epoch: Schema.Int,
  /** ISO 8601 UTC of the last change, or null when the profile has no stored state yet. */
  updated_at: Schema.NullOr(Schema.String),
  /** The runner that handled the message: its `host:port`, or `single` for the in-process runner. */
  served_by: Schema.String
}).annotate({ identifier: "ProfileState" })
export type ProfileState = typeof ProfileState.Type

export const RunnerStatus = Schema.Struct({
  address: Schema.String,
  healthy: Schema.Boolean
})

export const ClusterStatusInfo = Schema.Struct({
  mode: Schema.Literals(["single", "socket"]),
  /** This runner's advertised `host:port`, or `single`. */
  runner_address: Schema.String,
  /** Runners registered in the runner table; empty when the table cannot be read. */
  runners: Schema.Array(RunnerStatus),
  shards: Schema.Struct({
    total: Schema.Int,
    owned_by_this_runner: Schema.Int
  })
}).annotate({ identifier: "ClusterStatus" })
export type ClusterStatusInfo = typeof ClusterStatusInfo.Type

export const ServiceStatusInfo = Schema.Struct({
  version: Schema.String,
  database: Schema.Struct({
    mode: Schema.Literals(["postgres", "embedded"]),
    location: Schema.String,
    reachable: Schema.Boolean,
    migrations: Schema.Struct({
      /** Newest applied migration id; null when the database could not be read. */
      applied: Schema.NullOr(Schema.Int),
      latest: Schema.Int
    })
  }),
  cluster: ClusterStatusInfo
}).annotate({ identifier: "ServiceStatus" })
export type ServiceStatusInfo = typeof ServiceStatusInfo.Type

/**
 * What a call requires of its credential, read by the RPC authentication middleware: the same
 * fields as an HTTP operation's policy (src/http/policy.ts), so both adapters ask the same.
 */
export interface RpcPolicyShape {
  readonly scopes: ReadonlyArray<string>
  readonly scopeMode?: "all" | "any"
  /** Units of the per-minute allowance (heavy reads cost 3, as over HTTP). */
  readonly cost?: number
  readonly entitlement?: "svc_attribution"
  /** Answers customer personal data: every call is written to the workspace's PII access log. */
  readonly personData?: boolean
  /** The three cluster calls: no profile data, also open to the deprecated `SVC_RPC_TOKEN`. */
  readonly cluster?: boolean
}
export class RpcPolicy extends Context.Service<RpcPolicy, RpcPolicyShape>()("svc/RpcPolicy") {}

/** The refusals of authentication, before any handler runs (the HTTP middleware's, same codes). */
export const RpcAuthErrors = Schema.Union([
  Unauthorized,
  InsufficientScope,
  NotFound,
  EntitlementRequired,
  RateLimitExceeded,
  DatabaseUnavailable
])

/** Authenticates, checks scopes and the profile list, meters and logs every call (src/rpc/auth.ts). */
export class RpcAuth extends RpcMiddleware.Service<RpcAuth>()("svc/RpcAuth", {
  error: RpcAuthErrors,
  // The client half (src/rpc/client.ts) puts the credential in every request's RPC headers.
  requiredForClient: true
}) {}

const ProfileErrors = Schema.Union([DatabaseUnavailable, ServiceUnavailable])

const CLUSTER: RpcPolicyShape = { scopes: [], cluster: true }

export class ServiceStatus extends Rpc.make("ServiceStatus", { success: ServiceStatusInfo }).annotate(RpcPolicy, CLUSTER) {}

/** Reads the profile's state on the runner owning its shard. */
export class ProfileGetState extends Rpc.make("ProfileGetState", {
  payload: { profile_id: ProfileId },
  success: ProfileState,
  error: ProfileErrors
}).annotate(RpcPolicy, CLUSTER) {}

/**
 * Increments the profile's revocation epoch on the runner owning its shard. The message is
 * persisted: if that runner dies, the next owner processes it. `ServiceUnavailable` with
 * `reason: "outcome_unknown"` means the bump was accepted but not answered in time; it may
 * still apply.
 */
export class ProfileBumpRevocationEpoch extends Rpc.make("ProfileBumpRevocationEpoch", {
  payload: { profile_id: ProfileId },
  success: ProfileState,
  error: ProfileErrors
}).annotate(RpcPolicy, { ...CLUSTER, scopes: ["profiles:write"] }) {}


// ---- Parity with the HTTP API: the same request and answer schemas, the same errors. ----

const profileErrors = [NotFound, InvalidParameter, DatabaseUnavailable] as const
const analyticsErrors = Schema.Union([...profileErrors, InvalidDateRange])

/** `POST /api/v1/events`: idempotent on the event's `idempotency_key`, the same answer as HTTP. */
export class EventsIngest extends Rpc.make("EventsIngest", {
  payload: { profile_id: ProfileId, event: IngestEvent },
  success: IngestedEvent,
  error: Schema.Union([...profileErrors, ValidationError, IdempotencyKeyConflict, InvalidState])
}).annotate(RpcPolicy, { scopes: ["events:write"], entitlement: "svc_attribution" }) {}

export const MAX_INGEST_BATCH = 500

/** One event's answer in a batch: what `POST /api/v1/events` would have answered for it. */
export const IngestBatchItem = Schema.Union([
  Schema.Struct({ ok: Schema.Literal(true), data: IngestedEvent }),
  Schema.Struct({
    ok: Schema.Literal(false),
    error: Schema.Union([ValidationError, InvalidParameter, IdempotencyKeyConflict, InvalidState, NotFound])
  })
]).annotate({ identifier: "IngestBatchItem" })
export type IngestBatchItem = typeof IngestBatchItem.Type

/**
 * Up to 500 events of one profile, each recorded exactly as `EventsIngest` would (one event's
 * refusal does not stop the others); `results[i]` answers `events[i]`. Events are recorded
 * concurrently, as that many HTTP requests would be: do not rely on their commit order. Retrying
 * the whole batch is safe: every event is idempotent on its `idempotency_key`.
 */
export class EventsIngestBatch extends Rpc.make("EventsIngestBatch", {
  payload: {
    profile_id: ProfileId,
    events: Schema.Array(IngestEvent).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_INGEST_BATCH))
  },
  success: Schema.Struct({ results: Schema.Array(IngestBatchItem) }),
  error: DatabaseUnavailable
}).annotate(RpcPolicy, { scopes: ["events:write"], entitlement: "svc_attribution", cost: 1 }) {}

/** `GET /api/v1/conversions`. */
export class ConversionsList extends Rpc.make("ConversionsList", {
  payload: { profile_id: ProfileId, query: Schema.Struct(ConversionsQuery) },
  success: ConversionPage,
  error: analyticsErrors
}).annotate(RpcPolicy, { scopes: ["conversions:read"] }) {}

/** `GET /api/v1/overview`. */
export class AnalyticsOverview extends Rpc.make("AnalyticsOverview", {
  payload: { profile_id: ProfileId, query: Schema.Struct(OverviewQuery) },
  success: Overview,
  error: analyticsErrors
}).annotate(RpcPolicy, { scopes: ["analytics:read"] }) {}

/** `GET /api/v1/timeseries`. */
export class AnalyticsTimeseries extends Rpc.make("AnalyticsTimeseries", {
  payload: { profile_id: ProfileId, query: Schema.Struct(AnalyticsQuery) },
  success: Timeseries,
  error: analyticsErrors
}).annotate(RpcPolicy, { scopes: ["analytics:read"] }) {}

/** `GET /api/v1/campaigns`. */
export class CampaignsList extends Rpc.make("CampaignsList", {
  payload: { profile_id: ProfileId, query: Schema.Struct(CampaignsListQuery) },
  success: Campaigns,
  error: analyticsErrors
}).annotate(RpcPolicy, { scopes: ["campaigns:read"] }) {}

/** `GET /api/v1/conversions/{id}/journey`. */
export class ConversionJourneyGet extends Rpc.make("ConversionJourneyGet", {
  payload: { profile_id: ProfileId, conversion_id: Schema.String, query: Schema.Struct(JourneyPageQuery) },
  success: ConversionJourney,
  error: Schema.Union([...profileErrors, ConversionNotFound, InvalidState])
}).annotate(RpcPolicy, { scopes: ["conversions:read"] }) {}

/** `GET /api/v1/customers/journey` (projected: no contact data). */
export class PersonJourneyGet extends Rpc.make("PersonJourneyGet", {
  payload: { profile_id: ProfileId, query: Schema.Struct(PersonJourneyQuery) },
  success: PersonJourney,
  error: Schema.Union([...profileErrors, CustomerNotFound, InsufficientScope])
}).annotate(RpcPolicy, { scopes: ["conversions:read"] }) {}

/** `GET /api/v1/customers/{id}/journey`: person data, logged. */
export class CustomerJourneyGet extends Rpc.make("CustomerJourneyGet", {
  payload: { profile_id: ProfileId, customer_id: Schema.String, query: Schema.Struct(JourneyPageQuery) },
  success: PersonJourney,
  error: Schema.Union([...profileErrors, CustomerNotFound, InsufficientScope])
}).annotate(RpcPolicy, { scopes: ["customers:read"], cost: 3, personData: true }) {}

/** `GET /api/v1/customers` (by `email`, `phone` or `external_ref`): person data, logged. */
export class CustomersResolve extends Rpc.make("CustomersResolve", {
  payload: { profile_id: ProfileId, query: Schema.Struct(CustomersQuery) },
  success: CustomerPage,
  error: Schema.Union([...profileErrors, InsufficientScope])
}).annotate(RpcPolicy, { scopes: ["customers:read"], cost: 3, personData: true }) {}

/** `POST /api/v1/customers/erasures`: idempotent on `request_ref`. */
export class CustomersErase extends Rpc.make("CustomersErase", {
  payload: { profile_id: ProfileId, erasure: CreateErasure },
  success: ErasureAnswer,
  error: Schema.Union([...profileErrors, ValidationError, ApiKeyRequired, CustomerNotFound])
}).annotate(RpcPolicy, { scopes: ["attribution:write"] }) {}

/** `POST /api/v1/attribution/recompute`: joins a replay already queued. */
export class AttributionRecompute extends Rpc.make("AttributionRecompute", {
  payload: { profile_id: ProfileId },
  success: RecomputeAccepted,
  error: DatabaseUnavailable
}).annotate(RpcPolicy, { scopes: ["attribution:write"] }) {}

/** `GET /api/v1/tracking/replay-status`. */
export class ReplayStatusGet extends Rpc.make("ReplayStatusGet", {
  payload: { profile_id: ProfileId },
  success: ReplayStatusBody,
  error: DatabaseUnavailable
}).annotate(RpcPolicy, { scopes: ["analytics:read", "conversions:read"], scopeMode: "any" }) {}

/** One `outcome.recorded` event of the feed and the cursor to resume after it. */
export const RecordedFeedItem = Schema.Struct({ event: OutcomeRecordedEvent, cursor: Schema.String })
  .annotate({ identifier: "RecordedFeedItem" })

/**
 * Server streaming of `GET /api/v1/outcomes/recorded`: the profile's `outcome.recorded` events
 * oldest first from `cursor` (absent: the start of the 90-day window), then each new one as it
 * settles, until the caller stops. The same order, settling delay, contact rule and healthcare
 * rule as the replay route; reconnecting with the last item's `cursor` resumes without a gap.
 */
export class OutcomesRecordedFeed extends Rpc.make("OutcomesRecordedFeed", {
  payload: {
    profile_id: ProfileId,
    cursor: Schema.optionalKey(Schema.String),
    /** Events read per page from the outbox (1 to 200, default 200). */
    page_size: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_REPLAY_PAGE })))
  },
  success: RecordedFeedItem,
  error: Schema.Union([...profileErrors, HealthcareScopeForbidden]),
  stream: true
}).annotate(RpcPolicy, { scopes: ["conversions:read", "customers:read"], scopeMode: "any" }) {}


/** What the collector did with a server-side touch (`stored`, or a repeat of its `event_id`, or dropped). */
export const TouchRecorded = Schema.Struct({
  result: Schema.Literals(["stored", "duplicate", "dropped_bot", "dropped_do_not_track"])
}).annotate({ identifier: "TouchRecorded" })

/**
 * A server-side touch (decision 0096): the tracker event `POST /t/collect` takes, sent by a
 * service instead of a browser, recorded by the same collector code with the same validation
 * (size, schema, 7-day/5-minute window, bot user agents, the profile's `allow_server_side`
 * setting, since no `Origin` comes with it). `event.tracking_key` must be a key of `profile_id`.
 * Idempotent on `event.event_id`. `user_agent` is the browser's, when the service relays one.
 */
export class TouchesRecord extends Rpc.make("TouchesRecord", {
  payload: {
    profile_id: ProfileId,
    event: CollectEvent,
    user_agent: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(1024)))
  },
  success: TouchRecorded,
  error: Schema.Union([...profileErrors, ValidationError, PayloadTooLarge, Unauthorized, InsufficientScope, RateLimitExceeded])
}).annotate(RpcPolicy, { scopes: ["events:write"] }) {}

/**
 * Scopes only an internal-service credential holds (decision 0096): the HTTP route they mirror
 * belongs to the provisioning app, so no API key or token scope grants it.
 */
export const RPC_ONLY_SCOPES = ["entitlements:write"] as const

/**
 * `PUT /api/v1/profiles/{id}/entitlements/svc_attribution` for an internal service (decision
 * 0096): the same state machine, through the Profile entity, within the grant of the app that
 * provisioned the profile (a profile no app provisioned is `NotFound`, as over HTTP); the audit
 * rows name the service credential. Needs `entitlements:write`; not gated by the add-on itself.
 */
export class EntitlementsSet extends Rpc.make("EntitlementsSet", {
  payload: { profile_id: ProfileId, feature: Schema.Literal("svc_attribution"), change: SetEntitlement },
  success: EntitlementBody,
  error: Schema.Union([...profileErrors, InvalidState, ValidationError, ServiceUnavailable])
}).annotate(RpcPolicy, { scopes: ["entitlements:write"] }) {}

/** `GET /api/v1/experiments/{id}/results` (decision 0122): a draft is `InvalidState` (`experiment_draft`). */
export class ExperimentResultsGet extends Rpc.make("ExperimentResultsGet", {
  payload: { profile_id: ProfileId, experiment_id: Schema.String },
  success: ExperimentResultsBody,
  error: Schema.Union([NotFound, InvalidState, DatabaseUnavailable, ServiceUnavailable])
}).annotate(RpcPolicy, { scopes: ["analytics:read"] }) {}

export const ServiceRpcs = RpcGroup.make(
  ServiceStatus,
  ProfileGetState,
  ProfileBumpRevocationEpoch,
  EventsIngest,
  EventsIngestBatch,
  TouchesRecord,
  ConversionsList,
  AnalyticsOverview,
  AnalyticsTimeseries,
  CampaignsList,
  ConversionJourneyGet,
  PersonJourneyGet,
  CustomerJourneyGet,
  CustomersResolve,
  CustomersErase,
  AttributionRecompute,
  ReplayStatusGet,
  OutcomesRecordedFeed,
  EntitlementsSet,
  ExperimentResultsGet
).middleware(RpcAuth)
export type ServiceRpcs = RpcGroup.Rpcs<typeof ServiceRpcs>

// ---- Internal-service credentials (decision 0081): what the operator mints and lists. ----

export const RpcCredential = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  /** The secret's first characters (`svc_rpc_` and four more), to recognise it; never the secret. */
  prefix: Schema.String,
  scopes: Schema.Array(Schema.String),
  /** The profiles its calls may name; null: every profile. */
  profile_ids: Schema.NullOr(Schema.Array(Schema.String)),
  rate_limit_per_minute: Schema.Int,
  status: Schema.Literals(["active", "expired", "revoked"]),
  rotated_from_id: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  expires_at: Schema.NullOr(Schema.String),
  revoked_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "RpcCredential" })
export type RpcCredential = typeof RpcCredential.Type

/** A new credential and its secret, shown this once. */
export const MintedRpcCredential = Schema.Struct({
  credential: RpcCredential,
  secret: Schema.String,
  /** On a rotation: the previous credential, now ending at its `expires_at` (48 hours). */
  rotated_from: Schema.optionalKey(RpcCredential)
}).annotate({ identifier: "MintedRpcCredential" })
export type MintedRpcCredential = typeof MintedRpcCredential.Type
