/**
 * What leaves for an ad platform, per privacy mode (decision 0075). Pure: no I/O, unit-tested.
 *
 * - `standard`: the full page URL, `value`/`currency` and the other `custom_data`, the rule's
 *   event name; identities hashed (the platform refuses them in clear).
 * - `platform_safe` and `hipaa`: origin-only URLs, `custom_data` cut to an allowlist, SHA-256 of
 *   the normalised email and phone, neutral event names, nothing that names a health context.
 * - `custom`: what its `privacy_config` says, hashing always on.
 */
import { createHash } from "node:crypto"
import type { PrivacyMode } from "../../../schema/tenancy.ts"
import type { PrivacyConfig } from "../../../schema/exports.ts"
import type { ConversionEvent } from "../../connections/providers/adplatform/port.ts"

/** `custom_data` keys that never describe the person or their condition. */
export const PLATFORM_SAFE_CUSTOM_DATA = ["value", "currency", "order_id"] as const

/** Standard ad-platform event names: already neutral, kept as they are. */
export const STANDARD_EVENT_NAMES: ReadonlySet<string> = new Set([
  "Lead",
  "Purchase",
  "Schedule",
  "CompleteRegistration",
  "Contact",
  "SubmitApplication",
  "StartTrial",
  "Subscribe",
  "InitiateCheckout",
  "AddToCart",
  "ViewContent",
  "LeadSubmitted",
  "QualifiedLead",
  "OrderCreated",
  "OrderShipped"
])

export const sha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")

/** Trimmed, lower-cased (the platform's normalisation of an email). */
export const normaliseEmail = (email: string): string => email.trim().toLowerCase()

/** Digits only, country code included, no leading zeros (the platform's normalisation of a phone). */
export const normalisePhone = (phone: string): string => phone.replace(/\D/g, "").replace(/^0+/, "")

/** A name that carries nothing of the event's meaning: a standard name stays, any other becomes `Conversion_<hash>`. */
export const neutralEventName = (name: string): string =>
  STANDARD_EVENT_NAMES.has(name) ? name : `Conversion_${sha256(name).slice(0, 10)}`

/** The URL's origin, or undefined when it is not an absolute http(s) URL. */
export const originOnly = (url: string): string | undefined => {
  if (!URL.canParse(url)) return undefined
  const parsed = new URL(url)
  return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.origin : undefined
}

export interface ExportFacts {
  readonly eventId: string
  readonly eventName: string
  /** Unix seconds. */
  readonly eventTime: number
  readonly actionSource: string
  readonly eventSourceUrl: string | null
  readonly email: string | null
  readonly phone: string | null
  readonly externalId: string | null
  readonly clickIds: Readonly<Record<string, string>>
  readonly customData: Readonly<Record<string, unknown>>
}

interface Policy {
  readonly url: "full" | "origin" | "none"
  readonly allowlist: ReadonlyArray<string> | undefined
  readonly neutralNames: boolean
}

const policyOf = (mode: PrivacyMode, config: PrivacyConfig | null): Policy => {
  switch (mode) {
    case "standard":
      return { url: "full", allowlist: undefined, neutralNames: false }
    case "platform_safe":
    case "hipaa":
      return { url: "origin", allowlist: PLATFORM_SAFE_CUSTOM_DATA, neutralNames: true }
    case "custom":
      return {
        url: config?.url_mode ?? "origin",
        allowlist: config?.custom_data_allowlist ?? PLATFORM_SAFE_CUSTOM_DATA,
        neutralNames: config?.neutral_event_names ?? true
      }
  }
}

/** Click ids the platform matches on; a scrubbed feed keeps them (they carry no content). */
const CLICK_ID_FIELDS: Readonly<Record<string, string>> = { fbclid: "fbc", ctwa_clid: "ctwa_clid" }

/** The event as it goes out under `mode`. Only a `website` event carries `event_source_url`. */
export const scrub = (mode: PrivacyMode, config: PrivacyConfig | null, facts: ExportFacts): ConversionEvent => {
  const policy = policyOf(mode, config)
  const userData: Record<string, unknown> = {}
  if (facts.email !== null && facts.email.trim() !== "") userData["em"] = [sha256(normaliseEmail(facts.email))]
  if (facts.phone !== null && normalisePhone(facts.phone) !== "") userData["ph"] = [sha256(normalisePhone(facts.phone))]
  if (facts.externalId !== null) userData["external_id"] = [sha256(facts.externalId.trim())]
  for (const [key, field] of Object.entries(CLICK_ID_FIELDS)) {
    const value = facts.clickIds[key]
    if (value !== undefined) userData[field] = value
  }
  const customData = Object.fromEntries(
    Object.entries(facts.customData).filter(([key, value]) =>
      value !== null && value !== undefined && (policy.allowlist === undefined || policy.allowlist.includes(key))
    )
  )
  const url = facts.actionSource !== "website" || facts.eventSourceUrl === null || policy.url === "none"
    ? undefined
    : policy.url === "origin"
    ? originOnly(facts.eventSourceUrl)
    : facts.eventSourceUrl
  return {
    event_name: policy.neutralNames ? neutralEventName(facts.eventName) : facts.eventName,
    event_time: facts.eventTime,
    event_id: facts.eventId,
    action_source: facts.actionSource,
    ...(url === undefined ? {} : { event_source_url: url }),
    user_data: userData,
    ...(Object.keys(customData).length === 0 ? {} : { custom_data: customData })
  }
}
