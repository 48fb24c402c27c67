import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"

/** Replaces the profile's audience exclusions (decision 0099). */
export const SetAudienceExclusions = Schema.Struct({
  customer_ids: Schema.Array(Schema.String).check(Schema.isMaxLength(1000))
})

export const AudienceExclusions = Schema.Struct({
  profile_id: Schema.String,
  customer_ids: Schema.Array(Schema.String)
})

export const AudienceExclusionsBody = Schema.Struct({ data: AudienceExclusions })

// --- Customer-list audiences (issue 20 part 5, decision 0100) ---------------------------------

export const CUSTOMER_LIST_CONSENT_V1 = "2026-10-04.customer-list.v1"
export const CUSTOMER_LIST_CONSENT_V2 = "2026-10-04.customer-list.v2"
export const CustomerListConsentVersion = Schema.Literals([CUSTOMER_LIST_CONSENT_V1, CUSTOMER_LIST_CONSENT_V2])
export type CustomerListConsentVersion = typeof CustomerListConsentVersion.Type

/** The hashed fields each consent version uploads (the platform's schema names). */
export const CUSTOMER_LIST_FIELDS = {
  [CUSTOMER_LIST_CONSENT_V1]: ["EMAIL", "PHONE"],
  [CUSTOMER_LIST_CONSENT_V2]: ["EMAIL", "PHONE", "FN", "LN", "COUNTRY"]
} as const satisfies Record<CustomerListConsentVersion, ReadonlyArray<string>>
export const CustomerListField = Schema.Literals(["EMAIL", "PHONE", "FN", "LN", "COUNTRY"])
export type CustomerListField = typeof CustomerListField.Type

/**
 * The consent texts, line by line, per version and locale: rendered joined by single newlines
 * with no trailing newline; `text_hash` is the SHA-256 (lowercase hex, UTF-8) of that string.
 */
export const CUSTOMER_LIST_CONSENT_LINES = {
  [CUSTOMER_LIST_CONSENT_V1]: {
    en: [
      "I authorise uploading this profile's paying customers to the ad platform as a customer-list audience.",
      "Only the SHA-256 hashes of each customer's email address and phone number are uploaded.",
      "Customers on the profile's audience exclusions, erased customers and merged records are left out.",
      "The list is replaced in full at every sync and deleted from the ad platform when I switch it off."
    ],
    es: [
      "Autorizo subir los clientes que han pagado de este perfil a la plataforma de anuncios como un público de lista de clientes.",
      "Solo se suben los hashes SHA-256 del correo electrónico y del número de teléfono de cada cliente.",
      "Se omiten los clientes de las exclusiones de públicos del perfil, los clientes borrados y los registros fusionados.",
      "La lista se reemplaza entera en cada sincronización y se elimina de la plataforma de anuncios cuando la desactivo."
    ]
  },
  [CUSTOMER_LIST_CONSENT_V2]: {
    en: [
      "I authorise uploading this profile's paying customers to the ad platform as a customer-list audience.",
      "Only SHA-256 hashes are uploaded: of each customer's email address, phone number, first name, last name and country.",
      "Customers on the profile's audience exclusions, erased customers and merged records are left out.",
      "The list is replaced in full at every sync and deleted from the ad platform when I switch it off."
    ],
    es: [
      "Autorizo subir los clientes que han pagado de este perfil a la plataforma de anuncios como un público de lista de clientes.",
      "Solo se suben hashes SHA-256: del correo electrónico, el número de teléfono, el nombre, el apellido y el país de cada cliente.",
      "Se omiten los clientes de las exclusiones de públicos del perfil, los clientes borrados y los registros fusionados.",
      "La lista se reemplaza entera en cada sincronización y se elimina de la plataforma de anuncios cuando la desactivo."
    ]
  }
} as const satisfies Record<CustomerListConsentVersion, { readonly en: ReadonlyArray<string>; readonly es: ReadonlyArray<string> }>

export type CustomerListLocale = "en" | "es"

/** A version's text in a locale exactly as rendered (and hashed). */
export const customerListConsentText = (version: CustomerListConsentVersion, locale: CustomerListLocale): string =>
  CUSTOMER_LIST_CONSENT_LINES[version][locale].join("\n")

export const CustomerListConsentHint = Schema.Struct({
  version: Schema.String,
  text_hashes: Schema.Record(Schema.String, Schema.String)
})

const AdAccountId = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100))

/** Without `confirm: true` the POST is a proposal: nothing written, no platform call. */
export const CustomerListBody = Schema.Struct({
  confirm: Schema.optionalKey(Schema.Boolean),
  /** The profile's single live ad-platform connection when absent. */
  connection_id: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64))),
  /** Must be the connection's ad account when given. */
  ad_account_id: Schema.optionalKey(AdAccountId),
  /** Picks the fields of a proposal (default: the list's version, else v2). */
  consent_version: Schema.optionalKey(CustomerListConsentVersion),
  /** `{version, text_hash, accepted_by, accepted_at}`; checked by the service (422 when malformed). */
  consent: Schema.optionalKey(Schema.Unknown)
})
export type CustomerListBody = typeof CustomerListBody.Type

/** ISO 3166-1 alpha-2, upper case: what the lookalike answers (the body's code, upper-cased). */
const CountryCode = Schema.String.annotate({ description: "ISO 3166-1 alpha-2 country code, upper case (for example `ES`)." }).check(
  Schema.isPattern(/^[A-Z]{2}$/u, { message: "Expected an ISO 3166-1 alpha-2 country code (two upper-case letters)" })
)

export const LookalikeState = Schema.Struct({
  platform_audience_id: Schema.String,
  ratio: Schema.Finite,
  country: CountryCode,
  created_at: Schema.String
})

export const CustomerListStatus = Schema.Literals(["disabled", "unavailable", "off", "enabled"])
export type CustomerListStatus = typeof CustomerListStatus.Type

const StateFields = {
  profile_id: Schema.String,
  status: CustomerListStatus,
  /** Why the list cannot run: `platform_safe_audiences_disabled`, `privacy_mode_hipaa`; else null. */
  reason: Schema.NullOr(Schema.String),
  consent_version: Schema.NullOr(CustomerListConsentVersion),
  fields: Schema.Array(CustomerListField),
  connection_id: Schema.NullOr(Schema.String),
  ad_account_id: Schema.NullOr(Schema.String),
  platform_audience_id: Schema.NullOr(Schema.String),
  member_count: Schema.Int,
  excluded_count: Schema.Int,
  skipped_count: Schema.Int,
  last_synced_at: Schema.NullOr(Schema.String),
  lookalike: Schema.NullOr(LookalikeState)
}
export const CustomerListState = Schema.Struct(StateFields)
export type CustomerListState = typeof CustomerListState.Type

export const CustomerListBodyAnswer = Schema.Struct({ data: CustomerListState })

/** What this DELETE did at the ad platform (decision 0100); null when there was nothing there to delete. */
export const CustomerListPlatformDeletion = Schema.Struct({
  /** True: deleted now (or already gone); false: left on the platform, see `reason`. */
  deleted: Schema.Boolean,
  /** `connection_unusable`: the connection holding it is disconnected, revoked or lacks the grant; null when deleted. */
  reason: Schema.NullOr(Schema.Literal("connection_unusable")),
  /** The audience deleted, or left on the platform for the merchant to remove. */
  platform_audience_id: Schema.NullOr(Schema.String),
  lookalike_id: Schema.NullOr(Schema.String)
})
export type CustomerListPlatformDeletion = typeof CustomerListPlatformDeletion.Type

/** 200: the list is off; `platform_audience` says what happened at the platform. */
export const CustomerListDeleted = Schema.Struct({
  data: Schema.Struct({ ...StateFields, platform_audience: Schema.NullOr(CustomerListPlatformDeletion) })
})

/** 201: this confirm created the platform audience. */
export const CustomerListCreated = Schema.Struct({
  data: Schema.Struct({ ...StateFields, created: Schema.Literal(true) })
}).pipe(HttpApiSchema.status(201))
/** 200: a re-sync of the existing platform audience. */
export const CustomerListResynced = Schema.Struct({ data: Schema.Struct({ ...StateFields, created: Schema.Literal(false) }) })

/** 200: what a confirm would upload; nothing written. */
export const CustomerListProposal = Schema.Struct({
  data: Schema.Struct({
    proposal: Schema.Literal(true),
    consent_version: CustomerListConsentVersion,
    fields: Schema.Array(CustomerListField),
    member_count: Schema.Int,
    excluded_count: Schema.Int,
    skipped_count: Schema.Int,
    /** The hint of every supported version: sign one of these texts to confirm. */
    consent: Schema.Array(CustomerListConsentHint)
  })
})

export const LookalikeBody = Schema.Struct({
  /** ISO 3166-1 alpha-2; either case is accepted and the lookalike is made (and answered) in upper case. */
  country: Schema.String.annotate({
    description: "ISO 3166-1 alpha-2 country code (`ES`); either case is accepted, the answer's `lookalike.country` is upper case."
  }).check(Schema.isPattern(/^[A-Za-z]{2}$/u, { message: "Expected an ISO 3166-1 alpha-2 country code" }))
})

export const LookalikeAnswerFields = { profile_id: Schema.String, source_audience_id: Schema.String, lookalike: LookalikeState }
export const LookalikeCreated = Schema.Struct({
  data: Schema.Struct({ ...LookalikeAnswerFields, created: Schema.Literal(true) })
}).pipe(HttpApiSchema.status(201))
export const LookalikeExisting = Schema.Struct({ data: Schema.Struct({ ...LookalikeAnswerFields, created: Schema.Literal(false) }) })
