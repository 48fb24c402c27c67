import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { PageQuery } from "../../schema/common.ts"
import {
  ConnectionBody,
  ConnectionPage,
  Disconnected,
  FinalizePending,
  GrantReleased,
  HandoffBody,
  HandoffErrorPage,
  HandoffMinted,
  HandoffPage,
  HookAccepted,
  MintHandoff,
  PendingSelections
} from "../../schema/connections.ts"
import {
  AccountConnectedElsewhere,
  DatabaseUnavailable,
  InsufficientScope,
  InvalidRequest,
  InvalidState,
  NotFound,
  ServiceUnavailable,
  Unauthorized,
  ValidationError
} from "../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../http/policy.ts"

const read = policy({ scopes: ["connections:read"], auth: PROFILE_PRINCIPALS, idempotency: "none", grain: "profile" })
const write = policy({ scopes: ["connections:write"], auth: PROFILE_PRINCIPALS, idempotency: "optional", grain: "profile" })
const publicOperation = policy({ scopes: [], auth: [], idempotency: "none", grain: "none" })

const ProviderParam = { provider: Schema.String }
const IdParam = { id: Schema.String }

export const ConnectionsApi = HttpApiGroup.make("connections")
  .add(
    HttpApiEndpoint.get("listConnections", "/connections", {
      query: PageQuery,
      success: ConnectionPage,
      error: [NotFound.wire, InvalidRequest.wire]
    })
      .annotate(OpenApi.Summary, "The profile's provider connections; reports delivers_spend")
      .annotateMerge(read),
    HttpApiEndpoint.post("mintHandoff", "/connections/:provider/handoff", {
      params: ProviderParam,
      payload: MintHandoff,
      success: HandoffMinted,
      error: [NotFound.wire, InvalidRequest.wire, ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Mints a connect hand-off: start_url (the provider's consent), the /h/<handle> page, handoff_id")
      .annotate(
        OpenApi.Description,
        "Body `{return_url?, shop?}`. `return_url`'s origin must be one of the app's `redirect_uris` origins or " +
          "`allowed_return_origins` (a key of no app: this service's own origin), else 400 `invalid_request` " +
          "(`return_url_not_registered`) and nothing is created. `shop` is required for `commerce` (the store's handle, " +
          "`<handle>.mystore.shop` or `https://admin.mystore.shop/store/<handle>`), refused for the others. An unknown " +
          "provider is 404. The hand-off ends at `return_url` with `status`, `reason` and `handoff_id` (decision 0057)."
      )
      .annotateMerge(write),
    HttpApiEndpoint.get("getHandoff", "/connections/handoffs/:handoffId", {
      params: { handoffId: Schema.String },
      success: HandoffBody,
      error: [NotFound.wire, InvalidRequest.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Polls a hand-off: status and result (status, reason, connection_id)")
      .annotateMerge(read),
    HttpApiEndpoint.get("listPending", "/connections/pending/:provider", {
      params: ProviderParam,
      success: PendingSelections,
      error: [NotFound.wire, InvalidRequest.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Pending account selections of a provider: candidates, each with connected_elsewhere")
      .annotateMerge(read),
    HttpApiEndpoint.post("finalizePending", "/connections/pending/:provider/finalize", {
      params: ProviderParam,
      payload: FinalizePending,
      success: ConnectionBody,
      error: [NotFound.wire, InvalidRequest.wire, ValidationError.wire, AccountConnectedElsewhere.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Connects the chosen account of a pending selection")
      .annotate(
        OpenApi.Description,
        "409 `account_connected_elsewhere` when the account is live on another profile of the workspace; the parked " +
          "token stays, so another account can still be chosen."
      )
      .annotateMerge(write),
    HttpApiEndpoint.post("disconnect", "/connections/:id/disconnect", {
      params: IdParam,
      success: Disconnected,
      error: [NotFound.wire, InvalidRequest.wire, InsufficientScope.wire, InvalidState.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Disconnects: stops the provider's push channel, emits connection.revoked, audits")
      .annotate(
        OpenApi.Description,
        "An app's key may disconnect only on profiles its app provisioned (else 403 `insufficient_scope`); 409 " +
          "`invalid_state` (`sync_running`) while a sync of the connection runs."
      )
      .annotateMerge(write),
    HttpApiEndpoint.delete("releaseGrant", "/connections/:id", {
      params: IdParam,
      success: GrantReleased,
      error: [NotFound.wire, InvalidRequest.wire, InsufficientScope.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Gives up the calling app's own grant on the connection; the connection stays")
      .annotate(
        OpenApi.Description,
        "An app's key only (403 `insufficient_scope` otherwise). Also revokes the app's older key generations on the " +
          "profile (keys minted before the calling one), so `revoked_keys` can exceed the keys the app minted last (decision 0057)."
      )
      .annotateMerge(policy({ scopes: [], auth: PROFILE_PRINCIPALS, idempotency: "optional", grain: "profile" }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Connections")

/** The browser side of a hand-off: the `/h/<handle>` link and the provider's callback (HTML and redirects). */
export const ConnectPagesApi = HttpApiGroup.make("connectPages")
  .add(
    HttpApiEndpoint.get("handoffLink", "/h/:handle", {
      params: { handle: Schema.String },
      success: HandoffPage,
      // 404 `not_found` only for an address no route matches (an empty handle).
      error: [HandoffErrorPage, NotFound.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "A hand-off's link: redirects to the provider's consent (with a return_url) or a Continue card")
      .annotate(
        OpenApi.Description,
        "Expired or used links answer `handoff_expired` / `handoff_used`: back to `return_url` with `status=failed` and " +
          "the reason, or a page. A consent stopped partway makes the link usable again after 3 minutes."
      )
      .annotateMerge(publicOperation),
    HttpApiEndpoint.get("providerCallback", "/connect/:provider/callback", {
      params: ProviderParam,
      success: HandoffPage,
      error: [HandoffErrorPage, NotFound.wire, ServiceUnavailable.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "The provider's OAuth redirect: completes the consent, returns the person to return_url")
      .annotate(
        OpenApi.Description,
        "`code` and `state` (approve) or `error` and `state` (cancel). Ends at `return_url` with `status` (`success`, " +
          "`pending_selection`, `failed`, `cancelled`), `reason` (`connected`, `account_selection_required`, `user_cancelled`, " +
          "`internal_error`, ...) and `handoff_id`; without a return_url, a page saying so. A consent reaching a hand-off " +
          "already used (the redirect replayed, a double click, `start_url` opened again) answers `status=failed`, " +
          "`reason=handoff_used` and changes nothing."
      )
      .annotateMerge(publicOperation)
  )

/** Provider callbacks on SVC_BASE_URL (lead forms, grant deaths; orders, deals and messages in their issues). */
export const HooksApi = HttpApiGroup.make("hooks")
  .add(
    HttpApiEndpoint.post("providerHook", "/hooks/:provider", {
      params: ProviderParam,
      payload: Schema.Record(Schema.String, Schema.Unknown),
      success: HookAccepted,
      error: [NotFound.wire, Unauthorized.wire, InvalidRequest.wire, ServiceUnavailable.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "A provider's signed callback; each provider event id is handled once")
      .annotate(
        OpenApi.Description,
        "Signed with HMAC-SHA256 over the raw body under the provider app's secret, in the provider's header " +
          "(docs/sandbox-providers.md); timestamped schemes refuse timestamps over 5 minutes off. A bad or missing " +
          "signature is 401 `unauthorized` and nothing is written; an unknown provider 404."
      )
      .annotateMerge(publicOperation)
  )
