import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  DatabaseUnavailable,
  EntitlementRequired,
  InsufficientScope,
  InvalidRequest,
  LinkTokensDisabled,
  NotFound,
  ValidationError
} from "../../../schema/errors.ts"
import { IDENTIFIER_TYPES, MAX_LINK_TOKEN_SELECTORS, MintedLinkTokens, MintLinkTokens } from "../../../schema/link-tokens.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

/** Customer link tokens (decision 0037). */
export const LinkTokensApi = HttpApiGroup.make("linkTokens")
  .add(
    HttpApiEndpoint.post("mintLinkTokens", "/customers/link-tokens", {
      payload: MintLinkTokens,
      success: MintedLinkTokens,
      error: [
        NotFound.wire,
        InvalidRequest.wire,
        InsufficientScope.wire,
        ValidationError.wire,
        EntitlementRequired.wire,
        LinkTokensDisabled.wire,
        DatabaseUnavailable.wire
      ]
    })
      .annotate(
        OpenApi.Summary,
        "Mint link tokens for customers: a landing URL carrying ?svc_lt=<token> binds the visit to the customer"
      )
      .annotate(
        OpenApi.Description,
        `1 to ${MAX_LINK_TOKEN_SELECTORS} selectors, each customer_key alone or identifier_type ` +
          `(${IDENTIFIER_TYPES.join(", ")}) with value; one row per selector, in order. A row that minted nothing ` +
          "carries reason (no_match, erased, no_selector, unknown_identifier_type, malformed_selector) and message. " +
          "Merged customers mint for their survivor. Selecting by email or phone needs customers:read (403 otherwise); " +
          "customer_profile_id appears on minted rows only for callers holding customers:read, and such calls are " +
          "written to the workspace's PII access log. recipe token (default) or partner_page (requires landing_url " +
          "on an allowed tracking origin; rows then carry url). Tokens are opaque, expire after expires_in_days " +
          "(default 30, at most 90), are not stored, and stop binding once the customer is erased. " +
          "503 link_tokens_disabled on a deployment without a token secret."
      )
      .annotateMerge(policy({
        scopes: ["attribution:write"],
        auth: PROFILE_PRINCIPALS,
        grain: "profile",
        idempotency: "none",
        entitlement: "svc_attribution"
      }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Customer link tokens")
