/**
 * Link-token contract: `POST /api/v1/customers/link-tokens` (decision 0037). A link token names
 * one customer of one profile; put on a landing URL (`?svc_lt=<token>`), the web tracker forwards
 * it and the collector binds the visit's touches to that customer (`join_method: link_token`).
 *
 * A selector is checked row by row: a selector that cannot be read makes its row `invalid` with a
 * `reason`, never the whole request a 400 (only a body that is not this shape at all is).
 */
import { Schema } from "effect"

/** Selectors per request (more: 400 `validation_error`). */
export const MAX_LINK_TOKEN_SELECTORS = 100

/** Days a token binds, unless `expires_in_days` says otherwise (1 to 90). */
export const DEFAULT_LINK_TOKEN_DAYS = 30
export const MAX_LINK_TOKEN_DAYS = 90

/**
 * The five identifier types a selector may name: the kinds the identity graph stores, except
 * `national_id` (kept only as a keyed hash, never accepted as a selector).
 */
export const IDENTIFIER_TYPES = ["email", "phone", "external_id", "crm_contact_id", "anonymous_id"] as const
export type IdentifierType = (typeof IDENTIFIER_TYPES)[number]

/** Identifier types that are a person's contact data: selecting by them needs `customers:read`. */
export const PERSONAL_IDENTIFIER_TYPES: ReadonlyArray<IdentifierType> = ["email", "phone"]

/**
 * One customer to mint for: `customer_key` alone, or `identifier_type` with `value`. Any other
 * combination is an `invalid` row (`no_selector`, `unknown_identifier_type`, `malformed_selector`).
 */
export const LinkTokenSelector = Schema.Struct({
  customer_key: Schema.optionalKey(Schema.String),
  identifier_type: Schema.optionalKey(Schema.String.annotate({
    description: `One of ${IDENTIFIER_TYPES.join(", ")}; email and phone need customers:read`
  })),
  value: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "LinkTokenSelector" })
export type LinkTokenSelector = typeof LinkTokenSelector.Type

/**
 * What shapes each minted row. `token`: the token and `url_parameter` (`svc_lt=<token>`).
 * `partner_page`: also `url`, the `landing_url` with the parameter set; requires `landing_url`
 * on one of the profile's allowed tracking origins.
 */
export const LINK_TOKEN_RECIPES = {
  token: { requires: [] },
  partner_page: { requires: ["landing_url"] }
} as const satisfies Record<string, { readonly requires: ReadonlyArray<string> }>
export type LinkTokenRecipeName = keyof typeof LINK_TOKEN_RECIPES

export const LinkTokenRecipe = Schema.Literals(["token", "partner_page"])

const LandingUrl = Schema.String.check(
  Schema.isMaxLength(2048),
  Schema.makeFilter((value: string) => {
    if (!URL.canParse(value)) return "Expected an absolute URL"
    const url = new URL(value)
    if (url.protocol !== "https:" && url.protocol !== "http:") return "Expected an http or https URL"
    return undefined
  })
)

export const MintLinkTokens = Schema.Struct({
  selectors: Schema.Array(LinkTokenSelector).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_LINK_TOKEN_SELECTORS)),
  /** Default `token`. */
  recipe: Schema.optionalKey(LinkTokenRecipe),
  /** The page the link opens: required by `partner_page`, refused by `token`. */
  landing_url: Schema.optionalKey(LandingUrl),
  /** Default 30. */
  expires_in_days: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_LINK_TOKEN_DAYS })))
}).annotate({ identifier: "MintLinkTokens" })
export type MintLinkTokens = typeof MintLinkTokens.Type

export const LinkTokenReason = Schema.Literals([
  "no_match",
  "erased",
  "no_selector",
  "unknown_identifier_type",
  "malformed_selector"
])
export type LinkTokenReason = typeof LinkTokenReason.Type

/** `minted`; `invalid` (the selector cannot be read); `unresolved` (it names no live customer). */
export const LinkTokenStatus = Schema.Literals(["minted", "invalid", "unresolved"])

export const LinkTokenRow = Schema.Struct({
  /** The selector's position in `selectors`. */
  index: Schema.Int,
  status: LinkTokenStatus,
  /**
   * The key of the customer the token binds to (a merged customer's survivor; null when that
   * customer has none); on rows that minted nothing, the selector's own `customer_key`, else null.
   */
  customer_key: Schema.NullOr(Schema.String),
  /** Only for callers holding `customers:read`, and only on minted rows (absent otherwise, not null). */
  customer_profile_id: Schema.optionalKey(Schema.String),
  token: Schema.optionalKey(Schema.String),
  /** `svc_lt=<token>`, ready to append to a query string. */
  url_parameter: Schema.optionalKey(Schema.String),
  /** `partner_page` recipe: the landing URL carrying the parameter. */
  url: Schema.optionalKey(Schema.String),
  expires_at: Schema.optionalKey(Schema.String),
  /** On rows that minted nothing. */
  reason: Schema.optionalKey(LinkTokenReason),
  message: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "LinkTokenRow" })
export type LinkTokenRow = typeof LinkTokenRow.Type

export const MintedLinkTokens = Schema.Struct({
  data: Schema.Array(LinkTokenRow),
  meta: Schema.Struct({
    recipe: Schema.Struct({ name: LinkTokenRecipe, requires: Schema.Array(Schema.String) }),
    /** The query parameter the tracker reads (`svc_lt`). */
    parameter: Schema.String,
    expires_at: Schema.String,
    minted: Schema.Int,
    not_minted: Schema.Int
  })
}).annotate({ identifier: "MintedLinkTokens" })
export type MintedLinkTokens = typeof MintedLinkTokens.Type

/** A link token as the tracker forwards it to the collector (`link_token`): opaque, `lt1_...`. */
export const LinkTokenParameter = Schema.String.check(Schema.isMaxLength(256)).annotate({
  description: "The landing URL's svc_lt value; an unusable token is ignored, never an error"
})
