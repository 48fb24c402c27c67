/**
 * The error catalogue: every code of the specification's error table, one class each.
 *
 * A handler fails with `new NotFound({ message })`; the HTTP layer renders it as
 * `{"error":{"code","message","status","request_id",...}}`. The class carries its code and
 * HTTP status; the wire schema (`wire(NotFound)`) is what endpoints declare, so the
 * OpenAPI document lists every error an operation can answer.
 *
 * Two codes are not HTTP errors: `server_error` is an OAuth error (rendered in the OAuth
 * format by `/oauth/*`), and `not_reversible` is an outcome carried by a 200 response.
 */
import { Schema, SchemaTransformation } from "effect"
import { HttpApiSchema } from "effect/http-api"

/** `consent` on `consent_required`: the current version and the hash of each locale's text. */
export const ConsentHint = Schema.Struct({
  version: Schema.String,
  text_hashes: Schema.Record(Schema.String, Schema.String)
})

/** The envelope's optional fields, rendered only when present. */
const OptionalErrorFields = {
  reason: Schema.optionalKey(Schema.String),
  retry_after_seconds: Schema.optionalKey(Schema.Int),
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
  http_status: Schema.optionalKey(Schema.Literal(422))
}

/** `unauthorized` (401): Missing, invalid, expired or revoked key or token. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", ErrorFields) {
  static readonly code = "unauthorized"
  static readonly status = 401
}

/** `insufficient_scope` (403): A scope is missing; also routes refused to user tokens, projected-only reads asked for `?email=` or `?phone=` without `customers:read`, and person reads on healthcare profiles. */
export class InsufficientScope extends Schema.TaggedError<InsufficientScope>()("InsufficientScope", ErrorFields) {
  static readonly code = "insufficient_scope"
  static readonly status = 403
}

/** `api_key_required` (403): Erasure called with a session. */
export class ApiKeyRequired extends Schema.TaggedError<ApiKeyRequired>()("ApiKeyRequired", ErrorFields) {
  static readonly code = "api_key_required"
  static readonly status = 403
}

/** `rate_limit_exceeded` (429): Per-minute or own bucket exceeded, or an ad-platform throttle. Carries `Retry-After`. */
export class RateLimitExceeded extends Schema.TaggedError<RateLimitExceeded>()("RateLimitExceeded", ErrorFields) {
  static readonly code = "rate_limit_exceeded"
  static readonly status = 429
}

/** `invalid_parameter` (400): Bad query parameter; also a `subject_ref` that looks like personal data, or a national id in declared-source. */
export class InvalidParameter extends Schema.TaggedError<InvalidParameter>()("InvalidParameter", ErrorFields) {
  static readonly code = "invalid_parameter"
  static readonly status = 400
}

/** `invalid_date_range` (400): Range over 366 days or invalid dates. */
export class InvalidDateRange extends Schema.TaggedError<InvalidDateRange>()("InvalidDateRange", ErrorFields) {
  static readonly code = "invalid_date_range"
  static readonly status = 400
}

/** `invalid_request` (400): Missing `profile_id` for a user token. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", ErrorFields) {
  static readonly code = "invalid_request"
  static readonly status = 400
}

/** `validation_error` (400): Invalid body (400). Also 422 for an unknown `event_key` on a stage definition, malformed consent, or an ad-platform refusal of a budget between the service floor and its own minimum. */
export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", ErrorFields) {
  static readonly code = "validation_error"
  static readonly status = 400
}

/** `not_found` (404): Unknown or unreachable resource, unreachable profile, another app's profile, or a route this deployment does not serve. */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", ErrorFields) {
  static readonly code = "not_found"
  static readonly status = 404
}

/** `invalid_state` (409): The resource is not in a state that allows the operation. */
export class InvalidState extends Schema.TaggedError<InvalidState>()("InvalidState", ErrorFields) {
  static readonly code = "invalid_state"
  static readonly status = 409
}

/** `entitlement_required` (409): The attribution add-on (`svc_attribution`) is off for this profile. */
export class EntitlementRequired extends Schema.TaggedError<EntitlementRequired>()("EntitlementRequired", ErrorFields) {
  static readonly code = "entitlement_required"
  static readonly status = 409
}

/** `healthcare_scope_forbidden` (403): `analytics_pii` on a healthcare-family profile; replay of `outcome.recorded` by a non-provisioning caller. */
export class HealthcareScopeForbidden extends Schema.TaggedError<HealthcareScopeForbidden>()("HealthcareScopeForbidden", ErrorFields) {
  static readonly code = "healthcare_scope_forbidden"
  static readonly status = 403
}

/** `service_unavailable` (503): A privacy mode or key revocation could not be written; the grant is untouched. Retry. */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", ErrorFields) {
  static readonly code = "service_unavailable"
  static readonly status = 503
}

/** `database_unavailable` (503): The database is unreachable. Carries `Retry-After`; retry with the same body. */
export class DatabaseUnavailable extends Schema.TaggedError<DatabaseUnavailable>()("DatabaseUnavailable", ErrorFields) {
  static readonly code = "database_unavailable"
  static readonly status = 503
}

/** `link_tokens_disabled` (503): This deployment has no link-token secret. */
export class LinkTokensDisabled extends Schema.TaggedError<LinkTokensDisabled>()("LinkTokensDisabled", ErrorFields) {
  static readonly code = "link_tokens_disabled"
  static readonly status = 503
}

/** `internal_error` (500): Server error. Report the `request_id`. */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", ErrorFields) {
  static readonly code = "internal_error"
  static readonly status = 500
}

/** `consent_required` (409): Consent missing, wrong version, wrong hash or older than 24 hours. */
export class ConsentRequired extends Schema.TaggedError<ConsentRequired>()("ConsentRequired", ErrorFields) {
  static readonly code = "consent_required"
  static readonly status = 409
}

/** `idempotency_key_conflict` (409): The same `Idempotency-Key` was used with a different request. */
export class IdempotencyKeyConflict extends Schema.TaggedError<IdempotencyKeyConflict>()("IdempotencyKeyConflict", ErrorFields) {
  static readonly code = "idempotency_key_conflict"
  static readonly status = 409
}

/** `idempotency_key_in_flight` (409): A repeat arrived while the first request is still running. Retry with backoff. */
export class IdempotencyKeyInFlight extends Schema.TaggedError<IdempotencyKeyInFlight>()("IdempotencyKeyInFlight", ErrorFields) {
  static readonly code = "idempotency_key_in_flight"
  static readonly status = 409
}

/** `adplatform_connection_required` (409): No usable ad-platform connection (or several, with no destination naming one). */
export class AdplatformConnectionRequired extends Schema.TaggedError<AdplatformConnectionRequired>()("AdplatformConnectionRequired", ErrorFields) {
  static readonly code = "adplatform_connection_required"
  static readonly status = 409
}

/** `adplatform_write_permission_missing` (403): The connection lacks the manage-advertisements grant. Reconnect. */
export class AdplatformWritePermissionMissing extends Schema.TaggedError<AdplatformWritePermissionMissing>()("AdplatformWritePermissionMissing", ErrorFields) {
  static readonly code = "adplatform_write_permission_missing"
  static readonly status = 403
}

/** `budget_change_out_of_bounds` (422): Outside +/-50 % of the live budget or below the floor. */
export class BudgetChangeOutOfBounds extends Schema.TaggedError<BudgetChangeOutOfBounds>()("BudgetChangeOutOfBounds", ErrorFields) {
  static readonly code = "budget_change_out_of_bounds"
  static readonly status = 422
}

/** `adset_not_editable` (409): The ad set (or its campaign) is archived or deleted. */
export class AdsetNotEditable extends Schema.TaggedError<AdsetNotEditable>()("AdsetNotEditable", ErrorFields) {
  static readonly code = "adset_not_editable"
  static readonly status = 409
}

/** `campaign_not_editable` (409): The campaign cannot be edited. */
export class CampaignNotEditable extends Schema.TaggedError<CampaignNotEditable>()("CampaignNotEditable", ErrorFields) {
  static readonly code = "campaign_not_editable"
  static readonly status = 409
}

/** `campaign_not_found` (404): Campaign writes: the campaign is unknown or not this profile's. */
export class CampaignNotFound extends Schema.TaggedError<CampaignNotFound>()("CampaignNotFound", ErrorFields) {
  static readonly code = "campaign_not_found"
  static readonly status = 404
}

/** `campaign_not_pausable` (409): Campaign writes: the campaign cannot be paused in its current state. */
export class CampaignNotPausable extends Schema.TaggedError<CampaignNotPausable>()("CampaignNotPausable", ErrorFields) {
  static readonly code = "campaign_not_pausable"
  static readonly status = 409
}

/** `campaign_not_resumable` (409): Campaign writes: the campaign cannot be resumed in its current state. */
export class CampaignNotResumable extends Schema.TaggedError<CampaignNotResumable>()("CampaignNotResumable", ErrorFields) {
  static readonly code = "campaign_not_resumable"
  static readonly status = 409
}

/** `platform_safe_required` (409): Provision before switching to `platform_safe`. */
export class PlatformSafeRequired extends Schema.TaggedError<PlatformSafeRequired>()("PlatformSafeRequired", ErrorFields) {
  static readonly code = "platform_safe_required"
  static readonly status = 409
}

/** `platform_safe_audiences_disabled` (409): Audience proposal or confirm on a Platform-Safe profile. */
export class PlatformSafeAudiencesDisabled extends Schema.TaggedError<PlatformSafeAudiencesDisabled>()("PlatformSafeAudiencesDisabled", ErrorFields) {
  static readonly code = "platform_safe_audiences_disabled"
  static readonly status = 409
}

/** `clean_dataset_has_live_ad_sets` (409): Clean Dataset ad sets are still delivering (or cannot be read); confirm with `confirm_live_ad_sets: true`. */
export class CleanDatasetHasLiveAdSets extends Schema.TaggedError<CleanDatasetHasLiveAdSets>()("CleanDatasetHasLiveAdSets", ErrorFields) {
  static readonly code = "clean_dataset_has_live_ad_sets"
  static readonly status = 409
}

/** `destination_conflict` (409): The export destination would match another; carries `conflicting_destination_id`. Nothing was written. */
export class DestinationConflict extends Schema.TaggedError<DestinationConflict>()("DestinationConflict", ErrorFields) {
  static readonly code = "destination_conflict"
  static readonly status = 409
}

/** `event_not_found` (404): Unknown retraction key. */
export class EventNotFound extends Schema.TaggedError<EventNotFound>()("EventNotFound", ErrorFields) {
  static readonly code = "event_not_found"
  static readonly status = 404
}

/** `event_already_exported` (409): Retraction refused: a conversion export exists for the event. */
export class EventAlreadyExported extends Schema.TaggedError<EventAlreadyExported>()("EventAlreadyExported", ErrorFields) {
  static readonly code = "event_already_exported"
  static readonly status = 409
}

/** `event_linked_to_conversation` (409): Retraction refused: a conversation recorded the event as its lead. */
export class EventLinkedToConversation extends Schema.TaggedError<EventLinkedToConversation>()("EventLinkedToConversation", ErrorFields) {
  static readonly code = "event_linked_to_conversation"
  static readonly status = 409
}

/** `customer_not_found` (404): Unknown, erased or another profile's customer (by-key journey, erasure). */
export class CustomerNotFound extends Schema.TaggedError<CustomerNotFound>()("CustomerNotFound", ErrorFields) {
  static readonly code = "customer_not_found"
  static readonly status = 404
}

/** `conversion_not_found` (404): Unknown conversion handle. */
export class ConversionNotFound extends Schema.TaggedError<ConversionNotFound>()("ConversionNotFound", ErrorFields) {
  static readonly code = "conversion_not_found"
  static readonly status = 404
}

/** `erasure_not_found` (404): Unknown erasure receipt. */
export class ErasureNotFound extends Schema.TaggedError<ErasureNotFound>()("ErasureNotFound", ErrorFields) {
  static readonly code = "erasure_not_found"
  static readonly status = 404
}

/** `unknown_ad` (422): Referral for an ad that is not the profile's. */
export class UnknownAd extends Schema.TaggedError<UnknownAd>()("UnknownAd", ErrorFields) {
  static readonly code = "unknown_ad"
  static readonly status = 422
}

/** `unknown_answer_key` (422): Declared-source: the `answer_key` is not in the vocabulary. */
export class UnknownAnswerKey extends Schema.TaggedError<UnknownAnswerKey>()("UnknownAnswerKey", ErrorFields) {
  static readonly code = "unknown_answer_key"
  static readonly status = 422
}

/** `unknown_customer_ref` (422): Declared-source: an unknown `external_ref` without email or phone. */
export class UnknownCustomerRef extends Schema.TaggedError<UnknownCustomerRef>()("UnknownCustomerRef", ErrorFields) {
  static readonly code = "unknown_customer_ref"
  static readonly status = 422
}

/** `account_connected_elsewhere` (409): Finalize for an account live on another profile of the workspace. */
export class AccountConnectedElsewhere extends Schema.TaggedError<AccountConnectedElsewhere>()("AccountConnectedElsewhere", ErrorFields) {
  static readonly code = "account_connected_elsewhere"
  static readonly status = 409
}

/** `chat_app_a_connection_required` (409): Dataset ensure: no business chat connection. */
export class ChatAppAConnectionRequired extends Schema.TaggedError<ChatAppAConnectionRequired>()("ChatAppAConnectionRequired", ErrorFields) {
  static readonly code = "chat_app_a_connection_required"
  static readonly status = 409
}

/** `social_dm_connection_required` (409): Dataset ensure: no social direct-message connection. */
export class SocialDmConnectionRequired extends Schema.TaggedError<SocialDmConnectionRequired>()("SocialDmConnectionRequired", ErrorFields) {
  static readonly code = "social_dm_connection_required"
  static readonly status = 409
}

/** `social_dm_login_required` (409): Dataset ensure: the account was connected through the wrong login type. */
export class SocialDmLoginRequired extends Schema.TaggedError<SocialDmLoginRequired>()("SocialDmLoginRequired", ErrorFields) {
  static readonly code = "social_dm_login_required"
  static readonly status = 409
}

/** `feature_retired` (410): The operation is retired; it answers 410 until its sunset date and 404 afterwards. */
export class FeatureRetired extends Schema.TaggedError<FeatureRetired>()("FeatureRetired", ErrorFields) {
  static readonly code = "feature_retired"
  static readonly status = 410
}

/** `insights_enabling` (409): Template analytics are being switched on; carries `retry_after_seconds`. */
export class InsightsEnabling extends Schema.TaggedError<InsightsEnabling>()("InsightsEnabling", ErrorFields) {
  static readonly code = "insights_enabling"
  static readonly status = 409
}

/** `insights_unsupported` (422): The account type refuses the insights switch. */
export class InsightsUnsupported extends Schema.TaggedError<InsightsUnsupported>()("InsightsUnsupported", ErrorFields) {
  static readonly code = "insights_unsupported"
  static readonly status = 422
}

/** `template_not_found` (404): Template analytics: unknown template. */
export class TemplateNotFound extends Schema.TaggedError<TemplateNotFound>()("TemplateNotFound", ErrorFields) {
  static readonly code = "template_not_found"
  static readonly status = 404
}

/** `adplatform_unavailable` (502): The ad platform is unreachable. */
export class AdplatformUnavailable extends Schema.TaggedError<AdplatformUnavailable>()("AdplatformUnavailable", ErrorFields) {
  static readonly code = "adplatform_unavailable"
  static readonly status = 502
}

/** `invalid_content` (422): Media header of the wrong type or an unreachable URL. */
export class InvalidContent extends Schema.TaggedError<InvalidContent>()("InvalidContent", ErrorFields) {
  static readonly code = "invalid_content"
  static readonly status = 422
}

/** `payload_too_large` (413): The request body (or media) is over its size limit. */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", ErrorFields) {
  static readonly code = "payload_too_large"
  static readonly status = 413
}

/** `account_suspended` (403): Mailbox refusal on email send: the account is suspended. */
export class AccountSuspended extends Schema.TaggedError<AccountSuspended>()("AccountSuspended", ErrorFields) {
  static readonly code = "account_suspended"
  static readonly status = 403
}

/** `mailbox_disabled` (403): Mailbox refusal on email send: the mailbox is disabled. */
export class MailboxDisabled extends Schema.TaggedError<MailboxDisabled>()("MailboxDisabled", ErrorFields) {
  static readonly code = "mailbox_disabled"
  static readonly status = 403
}

/** `auth_revoked` (403): Mailbox refusal on email send: authorization was revoked (adds `reconnect_required: true`). */
export class AuthRevoked extends Schema.TaggedError<AuthRevoked>()("AuthRevoked", ErrorFields) {
  static readonly code = "auth_revoked"
  static readonly status = 403
}

/** `quota_exceeded` (429): The mailbox provider's quota is exhausted. */
export class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>()("QuotaExceeded", ErrorFields) {
  static readonly code = "quota_exceeded"
  static readonly status = 429
}

/** `recipient_rejected` (422): The provider refused the recipient. */
export class RecipientRejected extends Schema.TaggedError<RecipientRejected>()("RecipientRejected", ErrorFields) {
  static readonly code = "recipient_rejected"
  static readonly status = 422
}

const httpCatalogue = [
  { tag: "Unauthorized", code: "unauthorized", status: 401, error: Unauthorized, description: "Missing, invalid, expired or revoked key or token." },
  { tag: "InsufficientScope", code: "insufficient_scope", status: 403, error: InsufficientScope, description: "A scope is missing; also routes refused to user tokens, projected-only reads asked for `?email=` or `?phone=` without `customers:read`, and person reads on healthcare profiles." },
  { tag: "ApiKeyRequired", code: "api_key_required", status: 403, error: ApiKeyRequired, description: "Erasure called with a session." },
  { tag: "RateLimitExceeded", code: "rate_limit_exceeded", status: 429, error: RateLimitExceeded, description: "Per-minute or own bucket exceeded, or an ad-platform throttle. Carries `Retry-After`." },
  { tag: "InvalidParameter", code: "invalid_parameter", status: 400, error: InvalidParameter, description: "Bad query parameter; also a `subject_ref` that looks like personal data, or a national id in declared-source." },
  { tag: "InvalidDateRange", code: "invalid_date_range", status: 400, error: InvalidDateRange, description: "Range over 366 days or invalid dates." },
  { tag: "InvalidRequest", code: "invalid_request", status: 400, error: InvalidRequest, description: "Missing `profile_id` for a user token." },
  { tag: "ValidationError", code: "validation_error", status: 400, error: ValidationError, description: "Invalid body (400). Also 422 for an unknown `event_key` on a stage definition, malformed consent, or an ad-platform refusal of a budget between the service floor and its own minimum." },
  { tag: "NotFound", code: "not_found", status: 404, error: NotFound, description: "Unknown or unreachable resource, unreachable profile, another app's profile, or a route this deployment does not serve." },
  { tag: "InvalidState", code: "invalid_state", status: 409, error: InvalidState, description: "The resource is not in a state that allows the operation." },
  { tag: "EntitlementRequired", code: "entitlement_required", status: 409, error: EntitlementRequired, description: "The attribution add-on (`svc_attribution`) is off for this profile." },
  { tag: "HealthcareScopeForbidden", code: "healthcare_scope_forbidden", status: 403, error: HealthcareScopeForbidden, description: "`analytics_pii` on a healthcare-family profile; replay of `outcome.recorded` by a non-provisioning caller." },
  { tag: "ServiceUnavailable", code: "service_unavailable", status: 503, error: ServiceUnavailable, description: "A privacy mode or key revocation could not be written; the grant is untouched. Retry." },
  { tag: "DatabaseUnavailable", code: "database_unavailable", status: 503, error: DatabaseUnavailable, description: "The database is unreachable. Carries `Retry-After`; retry with the same body." },
  { tag: "LinkTokensDisabled", code: "link_tokens_disabled", status: 503, error: LinkTokensDisabled, description: "This deployment has no link-token secret." },
  { tag: "InternalError", code: "internal_error", status: 500, error: InternalError, description: "Server error. Report the `request_id`." },
  { tag: "ConsentRequired", code: "consent_required", status: 409, error: ConsentRequired, description: "Consent missing, wrong version, wrong hash or older than 24 hours." },
  { tag: "IdempotencyKeyConflict", code: "idempotency_key_conflict", status: 409, error: IdempotencyKeyConflict, description: "The same `Idempotency-Key` was used with a different request." },
  { tag: "IdempotencyKeyInFlight", code: "idempotency_key_in_flight", status: 409, error: IdempotencyKeyInFlight, description: "A repeat arrived while the first request is still running. Retry with backoff." },
  { tag: "AdplatformConnectionRequired", code: "adplatform_connection_required", status: 409, error: AdplatformConnectionRequired, description: "No usable ad-platform connection (or several, with no destination naming one)." },
  { tag: "AdplatformWritePermissionMissing", code: "adplatform_write_permission_missing", status: 403, error: AdplatformWritePermissionMissing, description: "The connection lacks the manage-advertisements grant. Reconnect." },
  { tag: "BudgetChangeOutOfBounds", code: "budget_change_out_of_bounds", status: 422, error: BudgetChangeOutOfBounds, description: "Outside +/-50 % of the live budget or below the floor." },
  { tag: "AdsetNotEditable", code: "adset_not_editable", status: 409, error: AdsetNotEditable, description: "The ad set (or its campaign) is archived or deleted." },
  { tag: "CampaignNotEditable", code: "campaign_not_editable", status: 409, error: CampaignNotEditable, description: "The campaign cannot be edited." },
  { tag: "CampaignNotFound", code: "campaign_not_found", status: 404, error: CampaignNotFound, description: "Campaign writes: the campaign is unknown or not this profile's." },
  { tag: "CampaignNotPausable", code: "campaign_not_pausable", status: 409, error: CampaignNotPausable, description: "Campaign writes: the campaign cannot be paused in its current state." },
  { tag: "CampaignNotResumable", code: "campaign_not_resumable", status: 409, error: CampaignNotResumable, description: "Campaign writes: the campaign cannot be resumed in its current state." },
  { tag: "PlatformSafeRequired", code: "platform_safe_required", status: 409, error: PlatformSafeRequired, description: "Provision before switching to `platform_safe`." },
  { tag: "PlatformSafeAudiencesDisabled", code: "platform_safe_audiences_disabled", status: 409, error: PlatformSafeAudiencesDisabled, description: "Audience proposal or confirm on a Platform-Safe profile." },
  { tag: "CleanDatasetHasLiveAdSets", code: "clean_dataset_has_live_ad_sets", status: 409, error: CleanDatasetHasLiveAdSets, description: "Clean Dataset ad sets are still delivering (or cannot be read); confirm with `confirm_live_ad_sets: true`." },
  { tag: "DestinationConflict", code: "destination_conflict", status: 409, error: DestinationConflict, description: "The export destination would match another; carries `conflicting_destination_id`. Nothing was written." },
  { tag: "EventNotFound", code: "event_not_found", status: 404, error: EventNotFound, description: "Unknown retraction key." },
  { tag: "EventAlreadyExported", code: "event_already_exported", status: 409, error: EventAlreadyExported, description: "Retraction refused: a conversion export exists for the event." },
  { tag: "EventLinkedToConversation", code: "event_linked_to_conversation", status: 409, error: EventLinkedToConversation, description: "Retraction refused: a conversation recorded the event as its lead." },
  { tag: "CustomerNotFound", code: "customer_not_found", status: 404, error: CustomerNotFound, description: "Unknown, erased or another profile's customer (by-key journey, erasure)." },
  { tag: "ConversionNotFound", code: "conversion_not_found", status: 404, error: ConversionNotFound, description: "Unknown conversion handle." },
  { tag: "ErasureNotFound", code: "erasure_not_found", status: 404, error: ErasureNotFound, description: "Unknown erasure receipt." },
  { tag: "UnknownAd", code: "unknown_ad", status: 422, error: UnknownAd, description: "Referral for an ad that is not the profile's." },
  { tag: "UnknownAnswerKey", code: "unknown_answer_key", status: 422, error: UnknownAnswerKey, description: "Declared-source: the `answer_key` is not in the vocabulary." },
  { tag: "UnknownCustomerRef", code: "unknown_customer_ref", status: 422, error: UnknownCustomerRef, description: "Declared-source: an unknown `external_ref` without email or phone." },
  { tag: "AccountConnectedElsewhere", code: "account_connected_elsewhere", status: 409, error: AccountConnectedElsewhere, description: "Finalize for an account live on another profile of the workspace." },
  { tag: "ChatAppAConnectionRequired", code: "chat_app_a_connection_required", status: 409, error: ChatAppAConnectionRequired, description: "Dataset ensure: no business chat connection." },
  { tag: "SocialDmConnectionRequired", code: "social_dm_connection_required", status: 409, error: SocialDmConnectionRequired, description: "Dataset ensure: no social direct-message connection." },
  { tag: "SocialDmLoginRequired", code: "social_dm_login_required", status: 409, error: SocialDmLoginRequired, description: "Dataset ensure: the account was connected through the wrong login type." },
  { tag: "FeatureRetired", code: "feature_retired", status: 410, error: FeatureRetired, description: "The operation is retired; it answers 410 until its sunset date and 404 afterwards." },
  { tag: "InsightsEnabling", code: "insights_enabling", status: 409, error: InsightsEnabling, description: "Template analytics are being switched on; carries `retry_after_seconds`." },
  { tag: "InsightsUnsupported", code: "insights_unsupported", status: 422, error: InsightsUnsupported, description: "The account type refuses the insights switch." },
  { tag: "TemplateNotFound", code: "template_not_found", status: 404, error: TemplateNotFound, description: "Template analytics: unknown template." },
  { tag: "AdplatformUnavailable", code: "adplatform_unavailable", status: 502, error: AdplatformUnavailable, description: "The ad platform is unreachable." },
  { tag: "InvalidContent", code: "invalid_content", status: 422, error: InvalidContent, description: "Media header of the wrong type or an unreachable URL." },
  { tag: "PayloadTooLarge", code: "payload_too_large", status: 413, error: PayloadTooLarge, description: "The request body (or media) is over its size limit." },
  { tag: "AccountSuspended", code: "account_suspended", status: 403, error: AccountSuspended, description: "Mailbox refusal on email send: the account is suspended." },
  { tag: "MailboxDisabled", code: "mailbox_disabled", status: 403, error: MailboxDisabled, description: "Mailbox refusal on email send: the mailbox is disabled." },
  { tag: "AuthRevoked", code: "auth_revoked", status: 403, error: AuthRevoked, description: "Mailbox refusal on email send: authorization was revoked (adds `reconnect_required: true`)." },
  { tag: "QuotaExceeded", code: "quota_exceeded", status: 429, error: QuotaExceeded, description: "The mailbox provider's quota is exhausted." },
  { tag: "RecipientRejected", code: "recipient_rejected", status: 422, error: RecipientRejected, description: "The provider refused the recipient." }
] as const

/** `validation_error` answered with 422 (unknown stage `event_key`, malformed consent, refused budget). */
export const unprocessable = (message: string, fields?: { readonly reason?: string }) =>
  new ValidationError({ message, http_status: 422, ...fields })

/** Every error class of the catalogue. */
export type ApiError = InstanceType<(typeof httpCatalogue)[number]["error"]>

export interface ApiErrorClass {
  new(fields: Schema.Struct.Type<typeof ErrorFields>): ApiError
  readonly code: string
  readonly status: number
}

/** The body every error renders, exactly as the specification's envelope. */
export const ErrorBody = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  status: Schema.Int,
  request_id: Schema.String,
  docs_url: Schema.optionalKey(Schema.String),
  ...OptionalErrorFields
}).annotate({ identifier: "ErrorBody" })

export const ErrorEnvelope = Schema.Struct({ error: ErrorBody }).annotate({ identifier: "ErrorEnvelope" })
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/** The status an error instance answers with. */
export const statusOf = (error: ApiError): number =>
  error._tag === "ValidationError" && error.http_status === 422 ? 422 : classOf(error).status

export const classOf = (error: ApiError): ApiErrorClass => {
  const entry = byTag.get(error._tag)
  if (entry === undefined) throw new Error(`not a catalogued error: ${error._tag}`)
  return entry
}

/**
 * The envelope of an error, before the request-scoped fields are known. `request_id` and
 * `docs_url` are filled by the HTTP layer's renderer (src/http/envelope.ts), the one place
 * that knows the request.
 */
export const toEnvelope = (error: ApiError, requestId = ""): ErrorEnvelope => {
  const { _tag, http_status: _status, message, ...optional } = error
  const body: Record<string, unknown> = {
    code: classOf(error).code,
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

const fromEnvelope = (cls: ApiErrorClass, envelope: ErrorEnvelope): ApiError => {
  const { code: _code, status, request_id: _rid, docs_url: _docs, ...fields } = envelope.error
  return new cls({ ...fields, ...(status === 422 && cls.code === "validation_error" ? { http_status: 422 } : {}) })
}

const wireCache = new Map<string, Schema.Top>()

/**
 * The schema an endpoint declares for an error class: the envelope on the wire, the class
 * instance in code, annotated with the class's HTTP status.
 */
export const wire = <C extends ApiErrorClass & Schema.Top>(cls: C): Schema.decodeTo<C, typeof ErrorEnvelope> => {
  const cached = wireCache.get(cls.code)
  if (cached !== undefined) return cached as Schema.decodeTo<C, typeof ErrorEnvelope>
  const schema = ErrorEnvelope.pipe(
    Schema.decodeTo(
      Schema.toType(cls),
      SchemaTransformation.transform({
        decode: (envelope) => fromEnvelope(cls, envelope) as C["Type"],
        encode: (error) => toEnvelope(error as ApiError)
      })
    ),
    HttpApiSchema.status(cls.status)
  ).annotate({ identifier: `Error_${cls.code}`, description: catalogueDescription(cls.code) })
  wireCache.set(cls.code, schema)
  return schema as unknown as Schema.decodeTo<C, typeof ErrorEnvelope>
}

/**
 * `validation_error` answered with 422 (the cases `unprocessable` builds), for an endpoint's
 * description. Listed after `wire(ValidationError)`, which encodes every instance (the envelope
 * carries the 422, which the renderer answers with), so this one only documents the status.
 */
export const wireUnprocessable = ErrorEnvelope.pipe(
  Schema.decodeTo(
    Schema.toType(ValidationError),
    SchemaTransformation.transform({
      decode: (envelope) => {
        const { code: _code, status: _status, request_id: _rid, docs_url: _docs, ...fields } = envelope.error
        return new ValidationError({ ...fields, http_status: 422 })
      },
      encode: (error) => toEnvelope(error)
    })
  ),
  HttpApiSchema.status(422)
).annotate({ identifier: "Error_validation_error_422", description: catalogueDescription("validation_error") })

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
export const catalogue: ReadonlyArray<CatalogueEntry> = [
  ...httpCatalogue.map(({ code, status, description }) => ({ code, status, kind: "http" as const, description })),
  {
    code: "server_error",
    status: 500,
    kind: "oauth",
    description:
      "OAuth error from `/oauth/token`: the profile's healthcare settings could not be read while minting. Retry."
  },
  {
    code: "not_reversible",
    status: null,
    kind: "outcome",
    description:
      "An outcome, not an HTTP status: a rollback answers 200 with `outcome: not_reversible` and `reason_code: state_drifted`; nothing was written."
  }
]

const byTag = new Map<string, ApiErrorClass>(httpCatalogue.map((entry) => [entry.tag, entry.error]))

function catalogueDescription(code: string): string {
  return httpCatalogue.find((entry) => entry.code === code)?.description ?? code
}

/** The status a failure answers with when it is a catalogued error; 500 for anything else. */
export const statusOfFailure = (failure: unknown): number => {
  if (typeof failure !== "object" || failure === null || !("_tag" in failure) || typeof failure._tag !== "string") return 500
  const entry = byTag.get(failure._tag)
  if (entry === undefined) return 500
  return failure._tag === "ValidationError" && "http_status" in failure && failure.http_status === 422 ? 422 : entry.status
}
