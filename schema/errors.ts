/**
 * The error catalogue: every code of the specification's error table, said once in `table`.
 *
 * Each HTTP code has one class, declared from its row (`class NotFound extends
 * ApiError("not_found") {}`). A handler fails with `new NotFound({ message })`; the HTTP layer
 * renders it as `{"error":{"code","message","status","request_id",...}}`. The class carries its
 * code and HTTP status; its wire schema (`NotFound.wire`) is what endpoints declare, so the
 * OpenAPI document lists every error an operation can answer.
 *
 * Two codes are not HTTP errors: `server_error` is an OAuth error (rendered in the OAuth
 * format by `/oauth/*`), and `not_reversible` is an outcome carried by a 200 response.
 */
import { type Cause, Schema, SchemaTransformation } from "effect"
import { HttpApiSchema } from "effect/http-api"

/** `consent` on `consent_required`: the current version and the hash of each locale's text. */
export const ConsentHint = Schema.Struct({
  version: Schema.String,
  text_hashes: Schema.Record(Schema.String, Schema.String)
})

/** The envelope's optional fields, rendered only when present. */
const OptionalErrorFields = {
  reason: Schema.optionalKey(Schema.String),
  retry_after_seconds: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  consent: Schema.optionalKey(ConsentHint),
  conflicting_destination_id: Schema.optionalKey(Schema.String),
  reconnect_required: Schema.optionalKey(Schema.Boolean),
  provider: Schema.optionalKey(Schema.String),
  provider_status: Schema.optionalKey(Schema.Int),
  provider_code: Schema.optionalKey(Schema.String),
  provider_message: Schema.optionalKey(Schema.String)
}

/** Fields a handler sets on an error: a message and any of the optional envelope fields. */
export const ErrorFields = {
  message: Schema.String,
  ...OptionalErrorFields,
  /** Only `validation_error` varies: 400 by default, 422 for the cases the spec names. */
  http_status: Schema.optionalKey(Schema.Literal(422)),
  /** Set on RPC refusals (src/rpc/auth.ts): the call's id, as HTTP puts it in the envelope. HTTP renders its own. */
  request_id: Schema.optionalKey(Schema.String)
}

/**
 * The specification's error table, in its order: per code the class tag and HTTP status (or,
 * for the two codes that are not HTTP errors, their kind) and the description. The classes,
 * their statuses, the OpenAPI error responses and /docs/errors are all read from it.
 */
const table = {
  unauthorized: { tag: "Unauthorized", status: 401, description: "Missing, invalid, expired or revoked key or token." },
  insufficient_scope: { tag: "InsufficientScope", status: 403, description: "A scope is missing; also routes refused to user tokens, projected-only reads asked for `?email=` or `?phone=` without `customers:read`, and person reads on healthcare profiles." },
  api_key_required: { tag: "ApiKeyRequired", status: 403, description: "Erasure called with a session." },
  rate_limit_exceeded: { tag: "RateLimitExceeded", status: 429, description: "Per-minute or own bucket exceeded, or an ad-platform throttle. Carries `Retry-After`." },
  invalid_parameter: { tag: "InvalidParameter", status: 400, description: "Bad query parameter; also a `subject_ref` that looks like personal data, or a national id in declared-source." },
  invalid_date_range: { tag: "InvalidDateRange", status: 400, description: "Range over 366 days or invalid dates." },
  invalid_request: { tag: "InvalidRequest", status: 400, description: "Missing `profile_id` for a user token." },
  validation_error: { tag: "ValidationError", status: 400, description: "Invalid body (400). Also 422 for an unknown `event_key` on a stage definition, malformed consent, or an ad-platform refusal of a budget between the service floor and its own minimum." },
  not_found: { tag: "NotFound", status: 404, description: "Unknown or unreachable resource, unreachable profile, another app's profile, or a route this deployment does not serve." },
  invalid_state: { tag: "InvalidState", status: 409, description: "The resource is not in a state that allows the operation." },
  entitlement_required: { tag: "EntitlementRequired", status: 409, description: "The attribution add-on (`svc_attribution`) is off for this profile." },
  healthcare_scope_forbidden: { tag: "HealthcareScopeForbidden", status: 403, description: "`analytics_pii` on a healthcare-family profile; replay of `outcome.recorded` by a non-provisioning caller." },
  service_unavailable: { tag: "ServiceUnavailable", status: 503, description: "A privacy mode or key revocation could not be written; the grant is untouched. Retry." },
  database_unavailable: { tag: "DatabaseUnavailable", status: 503, description: "The database is unreachable. Carries `Retry-After`; retry with the same body." },
  link_tokens_disabled: { tag: "LinkTokensDisabled", status: 503, description: "This deployment has no link-token secret." },
  internal_error: { tag: "InternalError", status: 500, description: "Server error. Report the `request_id`." },
  consent_required: { tag: "ConsentRequired", status: 409, description: "Consent missing, wrong version, wrong hash or older than 24 hours." },
  idempotency_key_conflict: { tag: "IdempotencyKeyConflict", status: 409, description: "The same `Idempotency-Key` was used with a different request." },
  idempotency_key_in_flight: { tag: "IdempotencyKeyInFlight", status: 409, description: "A repeat arrived while the first request is still running. Retry with backoff." },
  adplatform_connection_required: { tag: "AdplatformConnectionRequired", status: 409, description: "No usable ad-platform connection (or several, with no destination naming one)." },
  adplatform_write_permission_missing: { tag: "AdplatformWritePermissionMissing", status: 403, description: "The connection lacks the manage-advertisements grant. Reconnect." },
  budget_change_out_of_bounds: { tag: "BudgetChangeOutOfBounds", status: 422, description: "Outside +/-50 % of the live budget or below the floor." },
  adset_not_editable: { tag: "AdsetNotEditable", status: 409, description: "The ad set (or its campaign) is archived or deleted." },
  campaign_not_editable: { tag: "CampaignNotEditable", status: 409, description: "The campaign cannot be edited." },
  campaign_not_found: { tag: "CampaignNotFound", status: 404, description: "Campaign writes: the campaign is unknown or not this profile's." },
  campaign_not_pausable: { tag: "CampaignNotPausable", status: 409, description: "Campaign writes: the campaign cannot be paused in its current state." },
  campaign_not_resumable: { tag: "CampaignNotResumable", status: 409, description: "Campaign writes: the campaign cannot be resumed in its current state." },
  platform_safe_required: { tag: "PlatformSafeRequired", status: 409, description: "Provision before switching to `platform_safe`." },
  platform_safe_audiences_disabled: { tag: "PlatformSafeAudiencesDisabled", status: 409, description: "Audience proposal or confirm on a Platform-Safe profile." },
  clean_dataset_has_live_ad_sets: { tag: "CleanDatasetHasLiveAdSets", status: 409, description: "Clean Dataset ad sets are still delivering (or cannot be read); confirm with `confirm_live_ad_sets: true`." },
  destination_conflict: { tag: "DestinationConflict", status: 409, description: "The export destination would match another; carries `conflicting_destination_id`. Nothing was written." },
  event_not_found: { tag: "EventNotFound", status: 404, description: "Unknown retraction key." },
  event_already_exported: { tag: "EventAlreadyExported", status: 409, description: "Retraction refused: a conversion export exists for the event." },
  event_linked_to_conversation: { tag: "EventLinkedToConversation", status: 409, description: "Retraction refused: a conversation recorded the event as its lead." },
  customer_not_found: { tag: "CustomerNotFound", status: 404, description: "Unknown, erased or another profile's customer (by-key journey, erasure)." },
  conversion_not_found: { tag: "ConversionNotFound", status: 404, description: "Unknown conversion handle." },
  erasure_not_found: { tag: "ErasureNotFound", status: 404, description: "Unknown erasure receipt." },
  unknown_ad: { tag: "UnknownAd", status: 422, description: "Referral for an ad that is not the profile's." },
  unknown_answer_key: { tag: "UnknownAnswerKey", status: 422, description: "Declared-source: the `answer_key` is not in the vocabulary." },
  unknown_customer_ref: { tag: "UnknownCustomerRef", status: 422, description: "Declared-source: an unknown `external_ref` without email or phone." },
  account_connected_elsewhere: { tag: "AccountConnectedElsewhere", status: 409, description: "Finalize for an account live on another profile of the workspace." },
  chat_app_a_connection_required: { tag: "ChatAppAConnectionRequired", status: 409, description: "Dataset ensure: no business chat connection." },
  social_dm_connection_required: { tag: "SocialDmConnectionRequired", status: 409, description: "Dataset ensure: no social direct-message connection." },
  social_dm_login_required: { tag: "SocialDmLoginRequired", status: 409, description: "Dataset ensure: the account was connected through the wrong login type." },
  feature_retired: { tag: "FeatureRetired", status: 410, description: "The operation is retired; it answers 410 until its sunset date and 404 afterwards." },
  insights_enabling: { tag: "InsightsEnabling", status: 409, description: "Template analytics are being switched on; carries `retry_after_seconds`." },
  insights_unsupported: { tag: "InsightsUnsupported", status: 422, description: "The account type refuses the insights switch." },
  template_not_found: { tag: "TemplateNotFound", status: 404, description: "Template analytics: unknown template." },
  adplatform_unavailable: { tag: "AdplatformUnavailable", status: 502, description: "The ad platform is unreachable." },
  invalid_content: { tag: "InvalidContent", status: 422, description: "Media header of the wrong type or an unreachable URL." },
  payload_too_large: { tag: "PayloadTooLarge", status: 413, description: "The request body (or media) is over its size limit." },
  account_suspended: { tag: "AccountSuspended", status: 403, description: "Mailbox refusal on email send: the account is suspended." },
  mailbox_disabled: { tag: "MailboxDisabled", status: 403, description: "Mailbox refusal on email send: the mailbox is disabled." },
  auth_revoked: { tag: "AuthRevoked", status: 403, description: "Mailbox refusal on email send: authorization was revoked (adds `reconnect_required: true`)." },
  quota_exceeded: { tag: "QuotaExceeded", status: 429, description: "The mailbox provider's quota is exhausted." },
  recipient_rejected: { tag: "RecipientRejected", status: 422, description: "The provider refused the recipient." },
  server_error: {
    kind: "oauth",
    status: 500,
    description:
      "OAuth error from `/oauth/token`: the profile's healthcare settings could not be read while minting. Retry."
  },
  not_reversible: {
    kind: "outcome",
    status: null,
    description:
      "An outcome, not an HTTP status: a rollback answers 200 with `outcome: not_reversible` and `reason_code: state_drifted`; nothing was written."
  }
} as const

type Table = typeof table

/** The codes answered as HTTP errors: the rows with a class tag. */
export type HttpCode = { [C in keyof Table]: Table[C] extends { readonly tag: string } ? C : never }[keyof Table]

interface HttpRow {
  readonly code: string
  readonly status: number
}

/** The HTTP rows by class tag: how an error instance finds its code and status. */
const byTag = new Map<string, HttpRow>(
  Object.entries(table).flatMap(([code, row]) => ("tag" in row ? [[row.tag, { code, status: row.status }]] : []))
)

/** The body every error renders, exactly as the specification's envelope. */
export const ErrorBody = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  /** The HTTP status the error is answered with. */
  status: Schema.Int.check(Schema.isBetween({ minimum: 400, maximum: 599 })),
  request_id: Schema.String,
  docs_url: Schema.optionalKey(Schema.String),
  ...OptionalErrorFields
}).annotate({ identifier: "ErrorBody" })

export const ErrorEnvelope = Schema.Struct({ error: ErrorBody }).annotate({ identifier: "ErrorEnvelope" })
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/** What every catalogued error carries: its tag and the fields a handler sets. */
type CataloguedError = { readonly _tag: string } & Schema.Struct.Type<typeof ErrorFields>

const rowOf = (error: CataloguedError): HttpRow => {
  const row = byTag.get(error._tag)
  if (row === undefined) throw new Error(`not a catalogued error: ${error._tag}`)
  return row
}

/** The status an error instance answers with. */
const statusOf = (error: CataloguedError): number =>
  error._tag === "ValidationError" && error.http_status === 422 ? 422 : rowOf(error).status

/**
 * The envelope of an error, before the request-scoped fields are known. `request_id` and
 * `docs_url` are filled by the HTTP layer's renderer (src/http/envelope.ts), the one place
 * that knows the request.
 */
export const toEnvelope = (error: CataloguedError, requestId = ""): ErrorEnvelope => {
  const { _tag, http_status: _status, message, ...optional } = error
  const body: Record<string, unknown> = {
    code: rowOf(error).code,
    message,
    status: statusOf(error),
    request_id: requestId
  }
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined && key in OptionalErrorFields) body[key] = value
  }
  return { error: body as ErrorEnvelope["error"] }
}

/** An envelope with its request-scoped fields filled: the body of every error answer. */
export const envelopeBody = (envelope: ErrorEnvelope, requestId: string, docsBaseUrl: string): ErrorEnvelope => ({
  error: { ...envelope.error, request_id: requestId, docs_url: `${docsBaseUrl}/docs/errors#${envelope.error.code}` }
})

/**
 * The schema an endpoint declares for an error class: the envelope on the wire, the class
 * instance in code, annotated with the HTTP status it documents and the code's description.
 */
const wireSchema = <E extends CataloguedError, Tag extends string>(
  cls: Schema.Class<E, Schema.TaggedStruct<Tag, typeof ErrorFields>, Cause.YieldableError>,
  code: HttpCode,
  status: number,
  identifier: string
) =>
  ErrorEnvelope.pipe(
    Schema.decodeTo(
      Schema.toType(cls),
      SchemaTransformation.transform({
        decode: (envelope) => {
          const { code: _code, status, request_id: _rid, docs_url: _docs, ...fields } = envelope.error
          return cls.make({ ...fields, ...(status === 422 && code === "validation_error" ? { http_status: 422 } : {}) })
        },
        encode: (error) => toEnvelope(error)
      })
    ),
    HttpApiSchema.status(status)
  ).annotate({ identifier, description: table[code].description })

/**
 * The base class of the catalogue's error for `code`, read from its row: the tag, `code`,
 * `status` and `wire`, the schema endpoints declare. `wire` is built once, on first use, from
 * the declared subclass, so a decoded error is an instance of that subclass.
 */
export const ApiError = <const Code extends HttpCode>(code: Code) => {
  // Annotated so that each class keeps its own literal tag and status, not the union of all rows.
  const row: Table[Code] = table[code]
  const tag: Table[Code]["tag"] = row.tag
  const status: Table[Code]["status"] = row.status
  class CatalogueError extends Schema.TaggedError<CatalogueError>()(tag, ErrorFields) {
    static readonly code = code
    static readonly status = status
    static get wire() {
      return (wire ??= wireSchema(this, code, status, `Error_${code}`))
    }
  }
  let wire: ReturnType<typeof wireSchema<CatalogueError, Table[Code]["tag"]>> | undefined
  return CatalogueError
}

/** Every error of the catalogue, as an instance. */
export type ApiError = { [C in HttpCode]: InstanceType<ReturnType<typeof ApiError<C>>> }[HttpCode]

export class Unauthorized extends ApiError("unauthorized") {}
export class InsufficientScope extends ApiError("insufficient_scope") {}
export class ApiKeyRequired extends ApiError("api_key_required") {}
export class RateLimitExceeded extends ApiError("rate_limit_exceeded") {}
export class InvalidParameter extends ApiError("invalid_parameter") {}
export class InvalidDateRange extends ApiError("invalid_date_range") {}
export class InvalidRequest extends ApiError("invalid_request") {}
export class ValidationError extends ApiError("validation_error") {}
export class NotFound extends ApiError("not_found") {}
export class InvalidState extends ApiError("invalid_state") {}
export class EntitlementRequired extends ApiError("entitlement_required") {}
export class HealthcareScopeForbidden extends ApiError("healthcare_scope_forbidden") {}
export class ServiceUnavailable extends ApiError("service_unavailable") {}
export class DatabaseUnavailable extends ApiError("database_unavailable") {}
export class LinkTokensDisabled extends ApiError("link_tokens_disabled") {}
export class InternalError extends ApiError("internal_error") {}
export class ConsentRequired extends ApiError("consent_required") {}
export class IdempotencyKeyConflict extends ApiError("idempotency_key_conflict") {}
export class IdempotencyKeyInFlight extends ApiError("idempotency_key_in_flight") {}
export class AdplatformConnectionRequired extends ApiError("adplatform_connection_required") {}
export class AdplatformWritePermissionMissing extends ApiError("adplatform_write_permission_missing") {}
export class BudgetChangeOutOfBounds extends ApiError("budget_change_out_of_bounds") {}
export class AdsetNotEditable extends ApiError("adset_not_editable") {}
export class CampaignNotEditable extends ApiError("campaign_not_editable") {}
export class CampaignNotFound extends ApiError("campaign_not_found") {}
export class CampaignNotPausable extends ApiError("campaign_not_pausable") {}
export class CampaignNotResumable extends ApiError("campaign_not_resumable") {}
export class PlatformSafeRequired extends ApiError("platform_safe_required") {}
export class PlatformSafeAudiencesDisabled extends ApiError("platform_safe_audiences_disabled") {}
export class CleanDatasetHasLiveAdSets extends ApiError("clean_dataset_has_live_ad_sets") {}
export class DestinationConflict extends ApiError("destination_conflict") {}
export class EventNotFound extends ApiError("event_not_found") {}
export class EventAlreadyExported extends ApiError("event_already_exported") {}
export class EventLinkedToConversation extends ApiError("event_linked_to_conversation") {}
export class CustomerNotFound extends ApiError("customer_not_found") {}
export class ConversionNotFound extends ApiError("conversion_not_found") {}
export class ErasureNotFound extends ApiError("erasure_not_found") {}
export class UnknownAd extends ApiError("unknown_ad") {}
export class UnknownAnswerKey extends ApiError("unknown_answer_key") {}
export class UnknownCustomerRef extends ApiError("unknown_customer_ref") {}
export class AccountConnectedElsewhere extends ApiError("account_connected_elsewhere") {}
export class ChatAppAConnectionRequired extends ApiError("chat_app_a_connection_required") {}
export class SocialDmConnectionRequired extends ApiError("social_dm_connection_required") {}
export class SocialDmLoginRequired extends ApiError("social_dm_login_required") {}
export class FeatureRetired extends ApiError("feature_retired") {}
export class InsightsEnabling extends ApiError("insights_enabling") {}
export class InsightsUnsupported extends ApiError("insights_unsupported") {}
export class TemplateNotFound extends ApiError("template_not_found") {}
export class AdplatformUnavailable extends ApiError("adplatform_unavailable") {}
export class InvalidContent extends ApiError("invalid_content") {}
export class PayloadTooLarge extends ApiError("payload_too_large") {}
export class AccountSuspended extends ApiError("account_suspended") {}
export class MailboxDisabled extends ApiError("mailbox_disabled") {}
export class AuthRevoked extends ApiError("auth_revoked") {}
export class QuotaExceeded extends ApiError("quota_exceeded") {}
export class RecipientRejected extends ApiError("recipient_rejected") {}

/** `validation_error` answered with 422 (unknown stage `event_key`, malformed consent, refused budget). */
export const unprocessable = (message: string, fields?: { readonly reason?: string }) =>
  new ValidationError({ message, http_status: 422, ...fields })

/**
 * `validation_error` answered with 422 (the cases `unprocessable` builds), for an endpoint's
 * description. Listed after `ValidationError.wire`, which encodes every instance (the envelope
 * carries the 422, which the renderer answers with), so this one only documents the status.
 */
export const wireUnprocessable = wireSchema(ValidationError, "validation_error", 422, "Error_validation_error_422")

/**
 * What every profile-grain route may answer besides its own errors: an unknown or unreachable
 * profile, a user token without `profile_id`, a missing scope, the database down.
 */
export const profileErrors = [NotFound.wire, InvalidRequest.wire, InsufficientScope.wire, DatabaseUnavailable.wire] as const

/** What every workspace-grain route may answer besides its own errors: an unknown workspace, a missing scope, the database down. */
export const workspaceErrors = [NotFound.wire, InsufficientScope.wire, DatabaseUnavailable.wire] as const

/** `not_reversible`: the outcome of a rollback whose object no longer carries what the ledger row wrote. */
export const NotReversibleOutcome = Schema.Struct({
  outcome: Schema.Literal("not_reversible"),
  reason_code: Schema.Literal("state_drifted")
})

/** `server_error` in the OAuth error format (RFC 6749 section 5.2), answered by `/oauth/*`. */
export const OAuthErrorBody = Schema.Struct({
  error: Schema.String,
  error_description: Schema.optionalKey(Schema.String)
})

export interface CatalogueEntry {
  readonly code: string
  /** HTTP status, or null where the code is not answered as an HTTP error. */
  readonly status: number | null
  readonly kind: "http" | "oauth" | "outcome"
  readonly description: string
}

/** The whole table, in the specification's order: what /docs/errors renders and the catalogue test checks. */
export const catalogue: ReadonlyArray<CatalogueEntry> = Object.entries(table).map(([code, row]) => ({
  code,
  status: row.status,
  kind: "tag" in row ? "http" : row.kind,
  description: row.description
}))

/** The status a failure answers with when it is a catalogued error; 500 for anything else. */
export const statusOfFailure = (failure: unknown): number => {
  if (typeof failure !== "object" || failure === null || !("_tag" in failure) || typeof failure._tag !== "string") return 500
  const row = byTag.get(failure._tag)
  if (row === undefined) return 500
  return failure._tag === "ValidationError" && "http_status" in failure && failure.http_status === 422 ? 422 : row.status
}
