import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { DpaHandoffBody, DpaHandoffErrorPage, DpaHandoffPage, MintDpaHandoff } from "../../../../schema/dpa-handoff.ts"
import { DatabaseUnavailable, InsufficientScope, NotFound, Unauthorized, ValidationError } from "../../../../schema/errors.ts"
import { policy, PUBLIC } from "../../../http/policy.ts"

/** The calling app mints the link (decision 0098). */
const appCredential = policy({ scopes: [], auth: ["app_client"], idempotency: "optional", grain: "none" })
/**
 * The page sits outside the API middleware (like the set-password page): a plain HTML form
 * cannot send the X-CSRF-Token header, so the handlers read the session cookie themselves and
 * refuse cross-site posts (Sec-Fetch-Site, Origin) instead.
 */
const consolePage = policy(PUBLIC)
// A token or version carrying unstorable characters (NUL) is refused before the handler by the
// shared input filter, with the JSON `validation_error` (documented here as such).

export const DpaHandoffApi = HttpApiGroup.make("dpaHandoff")
  .add(
    HttpApiEndpoint.post("mintDpaHandoff", "/legal/dpa/handoff", {
      payload: MintDpaHandoff,
      success: DpaHandoffBody,
      error: [Unauthorized.wire, InsufficientScope.wire, NotFound.wire, ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "A single-use URL for a profile's owner to accept the DPA")
      .annotateMerge(appCredential)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "DPA hand-off to a profile's own owner")

export const DpaHandoffPagesApi = HttpApiGroup.make("dpaHandoffPages")
  .add(
    HttpApiEndpoint.get("dpaHandoffPage", "/legal/dpa/handoff", {
      payload: { token: Schema.optionalKey(Schema.String) },
      success: DpaHandoffPage,
      error: [DpaHandoffErrorPage, ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "The DPA hand-off page: the DPA and its accept form")
      .annotateMerge(consolePage),
    HttpApiEndpoint.post("dpaHandoffForm", "/legal/dpa/handoff", {
      payload: Schema.Struct({ token: Schema.String, version: Schema.String }).pipe(HttpApiSchema.asFormUrlEncoded()),
      success: DpaHandoffPage,
      error: [DpaHandoffErrorPage, ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "The hand-off form's target: accepts the DPA and uses the link up")
      .annotateMerge(consolePage)
  )
