/** Partner provisioning contract (`/api/v1/profiles`, OAuth-app client credential). */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { CurrencyCode } from "./common.ts"
import { ConnectScopes } from "./scopes.ts"

export const PrivacyMode = Schema.Literals(["standard", "platform_safe", "hipaa", "custom"])
export type PrivacyMode = typeof PrivacyMode.Type

/** What a partner may send: `custom` needs a privacy_config composed only in the conversion-sync catalog. */
export const PartnerPrivacyMode = Schema.Literals(["standard", "platform_safe", "hipaa"])

/** Connect scopes an app may ask for: every one but `attribution`, which only the entitlement sets. */
export const RequestableConnectScope = Schema.Literals(ConnectScopes.filter((scope) => scope !== "attribution"))

/** An IANA time zone name the runtime knows (`Europe/Madrid`, `UTC`). */
const isTimeZone = (name: string): boolean => {
  try {
    new Intl.DateTimeFormat("en", { timeZone: name })
    return true
  } catch {
    return false
  }
}

export const TimeZone = Schema.String.check(
  Schema.isMaxLength(64),
  Schema.makeFilter((name: string) => isTimeZone(name) ? undefined : "Expected an IANA time zone such as Europe/Madrid")
)

const ExternalRef = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))

/**
 * Two callers, one body. An OAuth app (HTTP Basic) provisions its merchant's profile: `external_ref`
 * is required, `workspace_id` and `time_zone` are not accepted. A person (`profiles:write`: a user
 * token or the console session) creates a profile in a workspace they own or administer:
 * `workspace_id` and `name` are required; `external_ref`, `scopes`, `email`, `reporting_currency`
 * and `privacy_mode` are partner fields and not accepted.
 */
export const ProvisionProfile = Schema.Struct({
  external_ref: Schema.optionalKey(ExternalRef.annotate({ description: "App credential: the merchant's id in the app (required)" })),
  workspace_id: Schema.optionalKey(Schema.String.annotate({ description: "Person: the workspace to create the profile in (required)" })),
  time_zone: Schema.optionalKey(TimeZone.annotate({ description: "Person: the profile's reporting time zone (default UTC)" })),
  scopes: Schema.optionalKey(Schema.Array(RequestableConnectScope).check(Schema.isMinLength(1))),
  name: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(200))),
  email: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: "Expected an email address" }))),
  currency: Schema.optionalKey(CurrencyCode),
  reporting_currency: Schema.optionalKey(CurrencyCode),
  privacy_mode: Schema.optionalKey(PartnerPrivacyMode)
})
export type ProvisionProfile = typeof ProvisionProfile.Type

export const ProvisionedProfile = Schema.Struct({
  profile_id: Schema.String,
  workspace_id: Schema.String,
  /** Null on a profile a person created. */
  external_ref: Schema.NullOr(Schema.String),
  created: Schema.Boolean,
  name: Schema.String,
  email: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  reporting_currency: Schema.NullOr(Schema.String),
  time_zone: Schema.String,
  /** The web tracker's public key for this profile (not a secret: the site's snippet carries it). */
  tracking_key: Schema.String,
  /** The connect scopes the app's grant now holds (empty on a profile a person created). */
  scopes: Schema.Array(Schema.String),
  /** Echoed when the request sent it. */
  privacy_mode: Schema.optionalKey(PrivacyMode),
  platform_safe_target: Schema.Literals(["existing", "clean"]),
  entitlements: Schema.Struct({ svc_attribution: Schema.Boolean }),
  /** Keys revoked by this call (a narrowed grant, a privacy mode that withholds person scopes). */
  revoked_keys: Schema.Int
}).annotate({ identifier: "ProvisionedProfile" })
export type ProvisionedProfile = typeof ProvisionedProfile.Type

/** 201 on the call that creates the profile (`created: true`), 200 on every replay: the flag picks the status. */
export const ProfileCreated = Schema.Struct({
  data: Schema.Struct({ ...ProvisionedProfile.fields, created: Schema.Literal(true) })
}).pipe(HttpApiSchema.status(201))
export const ProfileReplayed = Schema.Struct({
  data: Schema.Struct({ ...ProvisionedProfile.fields, created: Schema.Literal(false) })
})

export const ArchivedProfile = Schema.Struct({
  data: Schema.Struct({
    profile_id: Schema.String,
    workspace_id: Schema.String,
    archived: Schema.Literal(true),
    workspace_archived: Schema.Boolean
  })
})

export const AdoptProfile = Schema.Struct({
  external_ref: ExternalRef,
  scopes: ProvisionProfile.fields.scopes
})
export type AdoptProfile = typeof AdoptProfile.Type

export const SetEntitlement = Schema.Struct({
  enabled: Schema.Boolean,
  privacy_mode: Schema.optionalKey(PartnerPrivacyMode),
  /**
   * When the change happened on the app's side (ISO 8601). Deliveries may arrive out of order:
   * one older than the last applied delivery is discarded (`ignored_stale: true`, nothing written).
   */
  as_of: Schema.optionalKey(Schema.String.check(
    Schema.makeFilter((value: string) =>
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value))
        ? undefined
        : "Expected an ISO 8601 date-time with a time zone")
  ))
})
export type SetEntitlement = typeof SetEntitlement.Type

export const EntitlementResult = Schema.Struct({
  profile_id: Schema.String,
  feature: Schema.Literal("svc_attribution"),
  enabled: Schema.Boolean,
  changed: Schema.Boolean,
  /** Keys revoked because the privacy mode moved to a healthcare mode; present on that change. */
  revoked_keys: Schema.optionalKey(Schema.Int),
  privacy_mode: Schema.optionalKey(PrivacyMode),
  ignored_stale: Schema.optionalKey(Schema.Literal(true))
})
export type EntitlementResult = typeof EntitlementResult.Type

export const EntitlementBody = Schema.Struct({
  data: Schema.Struct({
    profile_id: Schema.String,
    feature: Schema.Literal("svc_attribution"),
    enabled: Schema.Boolean,
    changed: Schema.Boolean,
    /** The delivery was older than the last applied one and was discarded; nothing was written. */
    ignored_stale: Schema.optionalKey(Schema.Literal(true))
  }),
  meta: Schema.Struct({ profile_id: Schema.String }),
  grant: Schema.optionalKey(Schema.Struct({ revoked_keys: Schema.Int, privacy_mode: PrivacyMode }))
})
