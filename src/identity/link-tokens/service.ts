/**
 * Link tokens (decision 0037): for each selector, the customer it names and, when that customer
 * is live, an opaque token binding a web visit to them (`src/identity/link-tokens/token.ts`). Nothing is
 * written: a token is verified by its signature and the customer's state when the collector
 * sees it, so an erasure or a merge after minting applies to tokens already out.
 */
import { Clock, Context, Effect, Layer, Option, Redacted, Result } from "effect"
import {
  type DatabaseUnavailable,
  InsufficientScope,
  LinkTokensDisabled,
  ValidationError
} from "../../../schema/errors.ts"
import {
  DEFAULT_LINK_TOKEN_DAYS,
  IDENTIFIER_TYPES,
  type IdentifierType,
  LINK_TOKEN_RECIPES,
  type LinkTokenReason,
  type LinkTokenRow,
  type LinkTokenSelector,
  type MintedLinkTokens,
  type MintLinkTokens,
  PERSONAL_IDENTIFIER_TYPES
} from "../../../schema/link-tokens.ts"
import { PiiAccessLog } from "../../kernel/audit/pii-access.ts"
import { heldScopes, type PrincipalShape, type ProfileContext } from "../../kernel/principal.ts"
import { AppConfig } from "../../platform/config.ts"
import { normalizePhone } from "../normalize.ts"
import { type Lookup, LinkTokensRepo } from "./repo.ts"
import { deriveLinkTokenKeys, LINK_TOKEN_PARAM, mintLinkToken } from "./token.ts"

/** The route as the PII access log names it. */
const ROUTE = "POST /api/v1/customers/link-tokens"

const DAY_SECONDS = 86_400
const MAX_VALUE_LENGTH = 255

const isIdentifierType = (value: string): value is IdentifierType => (IDENTIFIER_TYPES as ReadonlyArray<string>).includes(value)

type Checked =
  | { readonly kind: "lookup"; readonly lookup: Lookup; readonly customerKey: string | null }
  | { readonly kind: "invalid"; readonly reason: LinkTokenReason; readonly message: string; readonly customerKey: string | null }

const invalid = (reason: LinkTokenReason, message: string, customerKey: string | null = null): Checked => ({
  kind: "invalid",
  reason,
  message,
  customerKey
})

/** An identifier's value as the identity graph stores it, or why it cannot be one. */
const normaliseValue = (type: IdentifierType, raw: string): { readonly value: string } | { readonly problem: string } => {
  switch (type) {
    case "email": {
      const value = raw.trim().toLowerCase()
      return value.length <= 320 && /^[^\s@]+@[^\s@]+$/.test(value) ? { value } : { problem: "value: expected an email address" }
    }
    case "phone":
      return Result.match(normalizePhone(raw), {
        onFailure: (problem) => ({ problem: `value: ${problem}` }),
        onSuccess: (value) => ({ value })
      })
    case "anonymous_id":
      return /^[A-Za-z0-9_-]{8,64}$/.test(raw)
        ? { value: raw }
        : { problem: "value: expected the tracker's anonymous id (8 to 64 letters, digits, - or _)" }
    case "external_id":
    case "crm_contact_id":
      return raw.trim() !== "" && raw.length <= MAX_VALUE_LENGTH
        ? { value: raw }
        : { problem: `value: expected 1 to ${MAX_VALUE_LENGTH} characters, not blank` }
  }
}

/** One selector: what to look up, or the row's `reason`. */
const checkSelector = (index: number, selector: LinkTokenSelector): Checked => {
  const { customer_key: key, identifier_type: type, value } = selector
  if (key === undefined && type === undefined && value === undefined) {
    return invalid("no_selector", "Name the customer with customer_key, or with identifier_type and value.")
  }
  if (key !== undefined) {
    if (type !== undefined || value !== undefined) {
      return invalid("malformed_selector", "A selector is customer_key alone, or identifier_type with value, not both.", key)
    }
    if (key.trim() === "" || key.length > MAX_VALUE_LENGTH) {
      return invalid("malformed_selector", `customer_key: expected 1 to ${MAX_VALUE_LENGTH} characters, not blank.`, key)
    }
    return { kind: "lookup", lookup: { index, kind: "customer_key", value: key }, customerKey: key }
  }
  if (type === undefined) return invalid("malformed_selector", "value without identifier_type: name the identifier's type.")
  if (!isIdentifierType(type)) {
    return invalid(
      "unknown_identifier_type",
      type === "national_id"
        ? "national_id is never accepted as a selector."
        : `identifier_type must be one of ${IDENTIFIER_TYPES.join(", ")}.`
    )
  }
  if (value === undefined) return invalid("malformed_selector", `identifier_type ${type} without value.`)
  const normalised = normaliseValue(type, value)
  if ("problem" in normalised) return invalid("malformed_selector", `${normalised.problem}.`)
  return { kind: "lookup", lookup: { index, kind: type, value: normalised.value }, customerKey: null }
}


const withParameter = (landingUrl: string, token: string) => {
  const url = new URL(landingUrl)
  url.searchParams.set(LINK_TOKEN_PARAM, token)
  return url.href
}

export class LinkTokens extends Context.Service<LinkTokens, {
  readonly mint: (
    principal: PrincipalShape,
    profile: ProfileContext,
    request: MintLinkTokens
  ) => Effect.Effect<MintedLinkTokens, LinkTokensDisabled | ValidationError | InsufficientScope | DatabaseUnavailable>
}>()("svc/LinkTokens") {
  static readonly layer = Layer.effect(LinkTokens)(
    Effect.gen(function*() {
      const repo = yield* LinkTokensRepo
      const piiLog = yield* PiiAccessLog
      const config = yield* AppConfig
      const keys = Option.map(config.linkTokenSecret ?? Option.none(), (secret) => deriveLinkTokenKeys(Redacted.value(secret)))

      const mint = Effect.fn("LinkTokens.mint")(function*(
        principal: PrincipalShape,
        profile: ProfileContext,
        request: MintLinkTokens
      ) {
        if (Option.isNone(keys)) {
          return yield* new LinkTokensDisabled({
            message: "Link tokens are off on this deployment: it has no token secret (SVC_LINK_TOKEN_SECRET)."
          })
        }
        const recipe = request.recipe ?? "token"
        const landingUrl = request.landing_url
        if (recipe === "partner_page") {
          if (landingUrl === undefined) {
            return yield* new ValidationError({ message: "body.landing_url: required by the partner_page recipe" })
          }
          const origin = new URL(landingUrl).origin.toLowerCase()
          const allowed = yield* repo.allowedOrigins(profile.profileId)
          if (!allowed.includes(origin)) {
            return yield* new ValidationError({
              message: `body.landing_url: ${origin} is not one of the profile's allowed tracking origins, ` +
                "so the tracker there could not report the visit; add it in the tracking settings"
            })
          }
        } else if (landingUrl !== undefined) {
          return yield* new ValidationError({ message: "body.landing_url: only the partner_page recipe takes a landing URL" })
        }

        const checked = request.selectors.map((selector, index) => checkSelector(index, selector))
        const lookups = checked.flatMap((row) => row.kind === "lookup" ? [row.lookup] : [])
        const holdsCustomersRead = heldScopes(principal).includes("customers:read")
        const personal = lookups.filter((lookup) => (PERSONAL_IDENTIFIER_TYPES as ReadonlyArray<string>).includes(lookup.kind))
        if (personal.length > 0 && !holdsCustomersRead) {
          return yield* new InsufficientScope({
            message: `Selecting customers by email or phone needs customers:read (selectors ${
              personal.map((lookup) => lookup.index).join(", ")
            }); select by customer_key or another identifier type instead.`,
            reason: "missing_scope:customers:read"
          })
        }

        const found = yield* repo.resolve(profile.profileId, lookups)
        const now = yield* Clock.currentTimeMillis
        const expiresAt = Math.floor(now / 1000) + (request.expires_in_days ?? DEFAULT_LINK_TOKEN_DAYS) * DAY_SECONDS
        const expiresIso = new Date(expiresAt * 1000).toISOString()

        const rows = checked.map((row, index): LinkTokenRow => {
          if (row.kind === "invalid") {
            return { index, status: "invalid", customer_key: row.customerKey, reason: row.reason, message: row.message }
          }
          const resolution = found.get(index)
          if (resolution === undefined) {
            return {
              index,
              status: "unresolved",
              customer_key: row.customerKey,
              reason: "no_match",
              message: "No customer of this profile matches the selector."
            }
          }
          if (resolution.erased) {
            return {
              index,
              status: "unresolved",
              customer_key: row.customerKey,
              reason: "erased",
              message: "The customer was erased: no token is minted and earlier tokens no longer bind."
            }
          }
          const token = mintLinkToken(keys.value, {
            profileId: profile.profileId,
            customerId: resolution.customer_id,
            expiresAt
          })
          return {
            index,
            status: "minted",
            customer_key: resolution.customer_key,
            ...(holdsCustomersRead ? { customer_profile_id: resolution.customer_id } : {}),
            token,
            url_parameter: `${LINK_TOKEN_PARAM}=${token}`,
            ...(recipe === "partner_page" && landingUrl !== undefined ? { url: withParameter(landingUrl, token) } : {}),
            expires_at: expiresIso
          }
        })

        // With customers:read the answer is a person read (profile ids, or a lookup by contact data).
        // Like the middleware's log: a failed write is reported, not turned into a failed call.
        if (holdsCustomersRead && (personal.length > 0 || rows.some((row) => row.customer_profile_id !== undefined))) {
          yield* piiLog.record({
            principal,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            route: ROUTE,
            result: "allowed"
          }).pipe(Effect.catch((error) => Effect.logWarning("PII access not logged", error)))
        }

        const minted = rows.filter((row) => row.status === "minted").length
        return {
          data: rows,
          meta: {
            recipe: { name: recipe, requires: [...LINK_TOKEN_RECIPES[recipe].requires] },
            parameter: LINK_TOKEN_PARAM,
            expires_at: expiresIso,
            minted,
            not_minted: rows.length - minted
          }
        } satisfies MintedLinkTokens
      })

      return { mint }
    })
  ).pipe(Layer.provide(LinkTokensRepo.layer))
}
