/** Operations, operator, tenancy, credentials, sessions, agreements and OAuth. */
import type { GroupDocs } from "./types.ts"

const appId = "The OAuth app's id."
const providerName = "A provider kind: `adplatform`, `crm`, `commerce`, `cardgw`, `chat_app_a`, `social_dm`, `page_messenger`, `short_video_messaging`, `email` or `calendar`; any other is 404."
const connectionId = "The connection's id."

export const accessDocs: GroupDocs = {
  "ops.healthz": { description: "Answers 200 while the process runs, whatever the database does: for liveness probes. Public." },
  "ops.readyz": {
    description: "200 once the database answers and every migration is applied; 503 `service_unavailable` while it does not, and from the first moment of a shutdown. For load balancers. Public."
  },
  "ops.openapi": { description: "This document: OpenAPI 3.1 with `x-scopes`, `x-auth`, `x-idempotency` and `x-scope-grain` on every operation. Public; built once per process." },
  "ops.status": { description: "Version, runtime, database mode and migrations, for operators. Needs the operator token (`SVC_ADMIN_TOKEN`)." },
  "admin.createOAuthApp": {
    description: "Registers a partner app. The answer carries `client_secret` and the JWT signing secret once; store them. The app then provisions profiles over HTTP Basic and exchanges its credential at `/oauth/token` for API keys."
  },
  "admin.listOAuthApps": { description: "Every registered OAuth app's settings, oldest first; never a secret or a secret's hash." },
  "admin.getOAuthApp": { description: "One app's settings, including the read-only `dpa_status` fields and `effective_return_origins`.", parameters: { id: appId } },
  "admin.updateOAuthApp": {
    description: "Changes the fields given. Switching `profile_resolution` to `external_ref` makes the `external_ref` claim of `id_token_hint` mandatory.",
    parameters: { id: appId }
  },
  "admin.deleteOAuthApp": { description: "Deletes the app; its grants and every key minted for it are revoked (within about 10 seconds).", parameters: { id: appId } },
  "admin.rotateClientSecret": { description: "Mints a new client secret, shown once; the old one stops authenticating at once.", parameters: { id: appId } },
  "admin.rotateJwtSecret": { description: "Mints a new `id_token_hint` signing secret, shown once; the client secret is untouched.", parameters: { id: appId } },
  "admin.listCommerceApps": { description: "Every registered commerce app with its OAuth scopes; never a secret." },
  "admin.createCommerceApp": { description: "Registers a merchant's custom-distribution commerce app and the OAuth scopes it asks the store for." },
  "admin.deleteCommerceApp": { description: "Kill switch: the app stops being used for new and existing connections at once.", parameters: { id: "The commerce app's id." } },
  "admin.updateWorkspace": {
    description: "Sets `is_healthcare_agency`. Turning it on makes every profile of the workspace healthcare-family: delegated keys carrying `customers:read` or `visitors:read` are revoked."
  },
  "connections.listConnections": { description: "The profile's provider connections with their status (`needs_action`, `reconnect_required`, with `status_reason`) and `delivers_spend` (false while the attribution add-on is off)." },
  "connections.mintHandoff": { parameters: { provider: providerName } },
  "connections.getHandoff": {
    description: "The hand-off's state (`minted`, `in_consent`, `success`, `pending_selection`, `failed`, `cancelled`) and `result`: the `status` and `reason` the person was returned with, and the connection made. An unsettled hand-off past `expires_at` answers `result.reason: handoff_expired`.",
    parameters: { handoffId: "The `handoff_id` the mint answered." }
  },
  "connections.listPending": {
    description: "Grants that reach several accounts wait here for a choice: each with its candidate accounts, and whether each is already live on this profile or on another profile of the workspace.",
    parameters: { provider: providerName }
  },
  "connections.finalizePending": { parameters: { provider: providerName } },
  "connections.disconnect": { parameters: { id: connectionId } },
  "connections.releaseGrant": { parameters: { id: connectionId } },
  "connectionStages.listPipelineStages": {
    parameters: {
      provider: "`crm`: pipeline stages exist for the CRM only; another provider kind is 404 (`reason: not_a_crm`), an unknown one 404.",
      locale: "`en` (default) or `es`: the language of stage and pipeline labels; anything else is 400 `invalid_parameter`."
    },
    response: {
      data: {
        provider: "crm",
        locale: "en",
        status: "ready",
        can_write: true,
        next_step: null,
        connection_id: "4f7c2a9e-0d1b-4c55-9a61-3f0e8b2d7c10",
        outcomes: ["appointment_booked", "purchase"],
        stages: [
          {
            id: "stage_1001_sales_won",
            pipeline_id: "pipe_1001_sales",
            pipeline_label: "Sales",
            label: "Closed won",
            position: 3,
            kind: "won",
            event_name: "crm.stage.stage_1001_sales_won",
            suggested_outcome: "purchase",
            current: { outcome: "purchase", source: "suggested", definition_id: null },
            writable: true
          },
          {
            id: "stage_1001_sales_lost",
            pipeline_id: "pipe_1001_sales",
            pipeline_label: "Sales",
            label: "Closed lost",
            position: 4,
            kind: "lost",
            event_name: "crm.stage.stage_1001_sales_lost",
            suggested_outcome: null,
            current: { outcome: null, source: "engine_default", definition_id: null },
            writable: false
          }
        ]
      }
    }
  },
  "connectPages.handoffLink": { parameters: { handle: "The handle of the hand-off's `handoff_url`." } },
  "connectPages.providerCallback": { parameters: { provider: providerName } },
  "hooks.providerHook": { parameters: { provider: providerName } },
  "tenancy.archiveProfile": {
    description: "Archives a profile the calling app provisioned, and its workspace in the same transaction when it holds no other live profile: memberships, keys, grants and webhook subscriptions end. Again on an archived profile: 200. A second live profile in the workspace: 409 `invalid_state`. Unknown, another app's or human-created: 404."
  },
  "tenancy.adoptProfile": { description: "Stamps `external_ref` on a profile the app provisioned without one and upserts the grant: 201 `created: true`, then 200 `created: false` for the same ref. 403 `healthcare_scope_forbidden` for `analytics_pii` on a healthcare-family profile." },
  "tenancy.setEntitlement": {
    description: "Turns the attribution add-on on (grant becomes `{connections, attribution}`, a backfill is queued) or off (grant narrowed to `{connections}`, keys minted under the wider grant revoked). The same value again answers `changed: false`. After a change, ask `/oauth/token` for a fresh key."
  },
  "apiKeys.listApiKeys": { description: "Every key of the workspace with its profile, scopes, rate limit, prefix and state; never the key itself." },
  "apiKeys.createApiKey": {
    description: "Creates a key bound to one profile of the workspace. `scopes` defaults to `analytics:read campaigns:read conversions:read realtime:read`. The plaintext `key` is in this answer only."
  },
  "apiKeys.updateApiKey": { description: "Changes a key's name, scopes or `rate_limit_per_minute`; a key in use sees the change within about 10 seconds." },
  "apiKeys.deleteApiKey": { description: "Revokes the key (the same as `POST .../revoke`); it stays listed as revoked." },
  "apiKeys.revokeApiKey": { description: "Revokes the key: it answers 401 `unauthorized` within about 10 seconds. Revoking again answers the revoked record." },
  "apiKeys.rotateApiKey": { description: "Mints a successor key with the same profile, scopes and limit (plaintext shown once). Both work for 48 hours; then the old one expires." },
  "members.listMembers": { description: "Active members with their `workspace_role` and the profiles they reach (`profile_role`, `permissions`)." },
  "members.putMember": {
    description: "Reconciles one person by email: creates the person (without a password) when needed, sets `workspace_role` (`admin`, `analyst`, `guest`); `profiles`, when sent, replaces the person's whole profile access. The owner cannot be changed (409)."
  },
  "members.removeMember": { description: "Soft-removes the person's workspace and profile memberships: `removed: true`; `removed: false` when there was nothing to remove. The owner cannot be removed (409)." },
  "workspaces.listWorkspaces": { description: "For a user token or session: the workspaces the person is an active member of. For an app: the ones it created." },
  "workspaces.createWorkspace": { description: "Creates a workspace; the signed-in person (or token holder, with `workspaces:write`) becomes its owner. `reporting_currency` defaults to the first connected ad account's currency." },
  "workspaces.archiveWorkspace": { description: "Archives an empty workspace (owner only): memberships end and its keys are revoked. 409 `invalid_state` while a live profile remains." },
  "workspaces.setReportingCurrency": { description: "Sets the ISO-4217 currency analytics are reported in; connecting an ad account never overrides it." },
  "workspaces.getMcpSettings": { description: "`pii_mode` and `mcp_writeback_enabled`: what MCP user tokens may read and write in this workspace." },
  "workspaces.putMcpSettings": { description: "Replaces the MCP settings. Owner or admin session, or the app that created the workspace; never a user token." },
  "workspaces.listPiiAccess": { description: "One row per read of customer or visitor personal data (who, when, route, result), newest first, kept 365 days. Owner or admin." },
  "workspaces.reportsHub": { description: "The caller's capabilities on the reports hub: `can_edit` (bulk schedule) and `can_apply` (bulk generate)." },
  "me.getMe": { description: "The calling credential: the key's profile and scopes, the token's person, or the app (with `return_url_supported`, its effective return origins)." },
  "me.listMyProfiles": { description: "The live profiles of live workspaces the signed-in person reaches (owners, admins and analysts every profile of their workspace; guests the profiles they are a member of), ordered by workspace then name, each with `workspace_role`, `profile_role` and `scopes`: what a call with `?profile_id=` holds there. Sessions only; the console's profile switcher reads it." },
  "sessions.createSession": {
    description: "Signs a person in: sets the `svc_session` cookie (HttpOnly) and returns `csrf_token`, to send as `X-CSRF-Token` on every write of the session. A browser's post from another site (`Sec-Fetch-Site` other than same-origin, or an `Origin` other than the service's own) is 403 `insufficient_scope`, reason `csrf`, and signs nobody in; a client that sends neither header (curl, SDKs) is not affected. Failures are throttled per email and client address (10 in 15 minutes) and per client address (50): 429 with `Retry-After`; another address is not affected (decision 0107)."
  },
  "sessions.deleteCurrentSession": { description: "Signs out: the session is revoked and the cookie cleared. 204." },
  "sessions.createMcpToken": { description: "Mints an MCP user token for the signed-in person with the MCP grants asked for (`mcp:read` by default). The plaintext is in this answer only. Refused to user tokens." },
  "dpa.getAppDpa": { description: "The app's DPA status, version, acceptor and time; for the owner or admin of the app's owner workspace.", parameters: { appId } },
  "dpa.acceptAppDpa": { description: "Accepts the current DPA for the app: every profile it provisioned, and every later one, reads `accepted` with this version and acceptor. Sessions only.", parameters: { appId } },
  "dpa.withdrawAppDpa": { description: "Withdraws the app's DPA: inherited profiles read `withdrawn`; profiles whose own owner accepted keep it.", parameters: { appId } },
  "dpa.getProfileAgreements": { description: "The profile's effective DPA (its own or inherited from the app that provisioned it), its BAA, and whether exports are held for lack of one." },
  "dpa.acceptProfileDpa": { description: "The profile's own owner or admin accepts the current DPA (a session; a key or token never accepts)." },
  "dpa.withdrawProfileDpa": { description: "Withdraws the profile's own DPA acceptance; `platform_safe` exports are held again unless an inherited one applies." },
  "dpa.acceptProfileBaa": { description: "The profile's owner or admin accepts the BAA, without which `hipaa` exports are held." },
  "dpaHandoff.mintDpaHandoff": { description: "The calling app mints a single-use, expiring URL (default 7 days) that leads a profile's own owner or admin, signed in to the console, to the DPA and its accept form. For a profile the app provisioned or holds a live grant on; 404 otherwise." },
  "dpaHandoffPages.dpaHandoffPage": { description: "The HTML page a DPA hand-off URL opens: the DPA and its accept form. Needs a console session." },
  "dpaHandoffPages.dpaHandoffForm": { description: "The page's form target: accepts the DPA through the profile acceptance path (owner or admin only) and uses the link up. Answers an HTML page." },
  "dpa.withdrawProfileBaa": { description: "Withdraws the BAA: `hipaa` exports are held from now on." },
  "retired.dashboardChat": { description: "Retired: answers 410 `feature_retired` until the sunset date (2027-01-08), 404 afterwards. No successor." },
  "retired.topPerformersChat": { description: "Retired: answers 410 `feature_retired` until the sunset date (2027-01-08), 404 afterwards. No successor." },
  "oauth.token": {
    request: { grant_type: "client_credentials", profile_id: "5f0c7a1e-8b2d-4c3e-9a41-6d2f0b7e8c15" },
    parameters: {}
  },
  "oauth.revoke": { description: "RFC 7009: revokes an API key minted for this app; any other token also answers 200 (nothing is said about tokens of others). Client credential by HTTP Basic or in the body." },
  "mcpOAuth.metadata": { description: "RFC 8414 metadata of the agent OAuth surface: endpoints, PKCE method `S256`, `none` client authentication. Public." },
  "mcpOAuth.signIn": { description: "The sign-in form of the consent screen: on success sets `svc_session` and shows the consent screen; on failure shows the form again (throttled like `POST /api/v1/sessions`: then as a 429 with `Retry-After`). Posted by the sign-in page only: a post another site makes (`Sec-Fetch-Site` other than same-origin, or a foreign `Origin`), or one without the page's `form_token` matching its `__Host-svc_form` cookie, is a 403 page and signs nobody in (decision 0107)." },
  "passwordPages.passwordPage": { description: "The HTML form a one-time set-password link opens. Public; the token in the URL is the credential." },
  "passwordPages.passwordForm": { description: "The form's target: sets the password, uses the link up, and signs the person out of every other session. Answers an HTML page. Like the sign-in form, it refuses a post from another site, or without the page's `form_token` and cookie (403 page, nothing changed; decision 0107)." },
  "collector.collectPreflight": { description: "CORS pre-flight for `POST /t/collect`: allowed origins of the tracking key get the CORS headers; others get none." }
}
