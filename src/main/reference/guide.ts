/**
 * The reference's front matter (`info.description`, markdown): Quickstart and Authentication.
 * The scope tables are generated from schema/scopes.ts, the source the service mints from, so
 * they cannot drift from what a key really carries.
 */
import { ConnectScopes, DEFAULT_KEY_SCOPES, McpGrants, scopesOfConnectScope, scopesOfMcpGrant } from "../../../schema/scopes.ts"

const code = (items: ReadonlyArray<string>) => items.map((item) => `\`${item}\``).join(", ")

const connectScopeNotes: Readonly<Record<string, string>> = {
  connections: "The default of a provisioned profile.",
  attribution: "Never requested by an app: set by the entitlement operation (`PUT /api/v1/profiles/{profileId}/entitlements/svc_attribution`).",
  analytics_pii: "Refused with 403 `healthcare_scope_forbidden` on a healthcare-family profile; ask for `analytics`.",
  attribution_write: "Older grant; provisioning again with `scopes: [\"connections\"]` narrows it."
}

const connectScopeTable = [
  "| Connect scope | Mints | Note |",
  "|---|---|---|",
  ...ConnectScopes.map((scope) => `| \`${scope}\` | ${code(scopesOfConnectScope[scope])} | ${connectScopeNotes[scope] ?? ""} |`)
].join("\n")

const mcpGrantTable = [
  "| MCP grant | API scopes |",
  "|---|---|",
  ...McpGrants.map((grant) => `| \`${grant}\` | ${code(scopesOfMcpGrant[grant])} |`)
].join("\n")

export const guide = `Marketing attribution over JSON: record touches (the web tracker, ad referrals) and outcomes
(server-side events, payments), credit outcomes to touches under six credit models, and read the
analytics, journeys and identities that result. Server-to-server: never put a key in browser or app code.

Machine-readable: [/api/v1/openapi.json](/api/v1/openapi.json) · Error codes: [/docs/errors](/docs/errors)

## Quickstart

1. Start the service: \`npm install && npm start\` (http://localhost:8080, embedded database in \`./.data\`).
2. Get a key, the fastest way: \`npm run cli -- quickstart\`. It creates (or reuses) a person, a workspace, a
   profile, a tracking key, a \`purchase\` conversion definition, and mints an API key with
   ${code(DEFAULT_KEY_SCOPES)} plus \`events:write\`, \`goals:write\` and \`tracking:write\`. The key is printed
   once; \`--json\` prints \`{person_email, sign_in_url, workspace_id, profile_id, api_key, tracking_key}\`.
3. Send an outcome:

\`\`\`sh
curl -s localhost:8080/api/v1/events -H "Authorization: Bearer $SVC_KEY" -H 'content-type: application/json' \\
  -d '{"event_name":"purchase","idempotency_key":"order-2026-000187","properties":{"value":"120.00","currency":"EUR"},"user_traits":{"external_id":"crm-10442"}}'
\`\`\`

4. Read it back: \`GET /api/v1/customers/journey?customer_key=crm-10442\` (the person's touches and outcomes) and
   \`GET /api/v1/overview?days=30\`. Analytics are rollups that catch up within seconds; \`meta.as_of\` says up to when.
5. Put the tracker on the site: \`GET /api/v1/tracking/snippet\` (or \`<script src="/t/tracker.js?key=<tracking key>">\`).

Every response is \`{"data": ..., "meta": ...}\`; pages carry \`pagination: {has_next, cursor}\` (pass \`cursor\` back).
Errors are \`{"error": {"code", "message", "status", "request_id", "docs_url"}}\`: branch on \`code\`
([catalogue](/docs/errors)). Every response carries \`X-Request-Id\`.

## Authentication

Every call sends \`Authorization: Bearer <credential>\` unless it says otherwise. Each operation lists the
credential kinds it takes (\`x-auth\`), the scopes it needs (\`x-scopes\`, all of them unless \`x-scope-mode: any\`;
with \`x-scope-from: body.channel\` the one the body's \`channel\` names),
and what the credential is scoped to (\`x-scope-grain\`: a profile, a workspace or an app).

| Credential | Looks like | How you get one | Where it works |
|---|---|---|---|
| API key | \`svc_live_...\` | \`npm run cli -- quickstart\`; \`POST /api/v1/workspaces/{workspaceId}/api-keys\` from a signed-in session (owner or admin); or an OAuth app's token exchange (below). Shown once. | One profile; its scopes. Default scopes: ${code(DEFAULT_KEY_SCOPES)}. |
| OAuth app client credential | \`client_id\` + \`client_secret\` | Registered by the operator: \`POST /api/v1/admin/oauth-apps\` or \`npm run cli -- oauth-apps create\`. The secret is shown once (rotate with \`.../rotate-client-secret\`). | HTTP Basic on \`/oauth/token\`, \`/oauth/revoke\` and the partner management routes (provisioning, adopt, archive, entitlements, members). Never a Bearer. |
| MCP user token | \`svc_user_...\` | A signed-in person: \`POST /api/v1/me/mcp-tokens\`; an agent: the \`/oauth/mcp/*\` flow (dynamic registration, PKCE, consent). Shown once. | Every profile the person can reach; profile routes need \`?profile_id=\`. Scopes are the token's grant intersected with the person's membership. |
| Console session | \`svc_session\` cookie | \`POST /api/v1/sessions\` with email and password (a first password is set through a one-time link: \`npm run cli -- quickstart\` prints one). | The console's own calls; writes also send the CSRF token returned at sign-in in \`X-CSRF-Token\`. |
| Operator token | \`SVC_ADMIN_TOKEN\` | Set the variable when starting the service; unset means no operator access. | \`/api/v1/admin/*\` only. |

Keys are hashed at rest and shown exactly once; revocation takes effect within about 10 seconds; a rotated key
and its successor both work for 48 hours. Rate limits: 60 requests per minute per key by default
(\`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\`, \`X-RateLimit-Reset\`; 429 carries \`Retry-After\`); heavy reads
(\`x-rate-cost\`) cost 3 units.

### Scopes of a key

Default: ${code(DEFAULT_KEY_SCOPES)}. \`customers:read\`, \`visitors:read\` and \`commerce:live\` expose personal data:
grant them only when needed. \`campaigns:apply\` and \`creatives:write\` are never granted by default. Keys of a
healthcare-family profile never carry \`customers:read\` or \`visitors:read\`.

### How an OAuth app reaches a key

1. The operator registers the app (\`POST /api/v1/admin/oauth-apps\`): you receive \`client_id\`, \`client_secret\` and a
   JWT signing secret (for \`id_token_hint\`), each shown once.
2. The app provisions a merchant's profile with its client credential over HTTP Basic:
   \`POST /api/v1/profiles\` \`{"external_ref": "merchant-4821", "scopes": ["connections"]}\`. This creates the workspace
   (if needed), the profile, a tracking key and the app's **grant** on the profile (its connect scopes). The same
   \`external_ref\` again re-consents and updates the grant. A merchant can also consent through \`GET /oauth/authorize\`.
3. The app exchanges its credential for a key: \`POST /oauth/token\` with \`grant_type=client_credentials\` and
   \`profile_id\` (or \`grant_type=authorization_code\` with the code from \`/oauth/authorize\`). The answer's
   \`access_token\` is an API key (\`svc_live_...\`, carrying \`oauth_app_id\`) and \`scope\` lists the scopes it holds.
   Use PKCE with \`/oauth/authorize\`: send \`code_challenge\` (BASE64URL of the SHA-256 of a random
   \`code_verifier\`) with \`code_challenge_method=S256\` (\`plain\` is refused), then the \`code_verifier\` with the code.
4. After any grant change (provisioning again, the attribution add-on turned on or off, a privacy-mode change) ask
   for a fresh key the same way: keys minted under a wider grant are revoked.

### Connect scopes (what a grant mints)

${connectScopeTable}

The attribution add-on (\`svc_attribution\`) is off on every app-provisioned profile until the app turns it on with
the entitlement operation; writes of the attribution tier then answer 409 \`entitlement_required\`, reads answer empty.

### MCP user tokens

${mcpGrantTable}

No MCP grant gives \`commerce:read\`, \`visitors:read\`, \`events:write\`, \`creatives:write\` or a messaging scope: use
an API key. A user token never reaches \`/api/v1/me/**\` or the key and MCP-settings writes of a workspace.
`

/** Tag descriptions (markdown), by the group identifiers the endpoints are declared under. */
export const tagDescriptions: Readonly<Record<string, string>> = {
  ops: "Health, readiness, this description and the operator's status.",
  admin: "Operator surface (`SVC_ADMIN_TOKEN`): OAuth apps, commerce apps, workspace flags.",
  connections: "Provider connections of a profile (ad platforms, CRMs, commerce, messaging): connect hand-offs, pending account selections, disconnect.",
  connectPages: "A connect hand-off in the browser: the `/h/<handle>` link and the provider's redirect back (on `SVC_BASE_URL`).",
  commerceLive: "Live reads of the connected store (`commerce:live`): catalogue with stock, orders changed since a time with buyer email and phone; proxied to the store on every call, never served from the service's copy (decision 0061).",
  hooks: "Providers' signed callbacks on `SVC_BASE_URL`: lead forms, grant deaths (and the CRM, commerce and messaging events of their issues).",
  tenancy: "Partner provisioning with an OAuth app's client credential (HTTP Basic): profiles, adopt, archive, the attribution add-on.",
  apiKeys: "A workspace's API keys: create (shown once), edit, revoke, rotate (48 hours of overlap).",
  members: "A workspace's team, reconciled by email.",
  workspaces: "Workspaces, reporting currency, MCP settings, the personal-data access log, the reports hub.",
  me: "Who the calling credential is.",
  sessions: "Console sign-in and sign-out, and MCP user tokens minted by a signed-in person.",
  passwords: "Setting a password with a one-time link's token.",
  peopleAdmin: "Operator: one-time set-password links (invite or reset).",
  onboarding: "Operator: a ready account in one call (what `npm run cli -- quickstart` uses).",
  dpa: "Data-processing agreements (DPA) and business-associate agreements (BAA) of apps and profiles.",
  dpaHandoff: "A single-use URL for a profile's own owner to accept the DPA.",
  dpaHandoffPages: "The HTML DPA hand-off page.",
  tracking: "The web tracker: tracking keys, the snippet, tracker settings.",
  trackingSetup: "Installing and checking the tracker: installers, first-party collector domains, install verification, diagnostics.",
  retired: "Retired routes: they answer 410 `feature_retired` until their sunset date.",
  definitions: "Goal (conversion) definitions: which event names count as which conversion, cash or not, lookback.",
  attribution: "Attribution replays: recompute a profile and follow the progress.",
  events: "Server-side outcome events, retractions, conversions and the `outcome.recorded` replay.",
  payments: "Payments (conversions that count as cash) and the merchant's corrections to them.",
  partnerData: "Partner data: ad referrals of click-to-message conversations and declared sources.",
  linkTokens: "Link tokens that bind a landing visit to a known customer.",
  customers: "Journeys, customers, visitors and erasure.",
  identity: "Identity resolution: merge proposals, merges and their undo.",
  identityRepair: "Identifier repair and inferred visitor-to-customer links.",
  analytics: "Overview, timeseries and breakdowns (rollups; `meta.as_of` says how fresh).",
  campaigns: "Campaign, ad set and ad performance under a credit model.",
  insights: "Model comparison, dimensions, tracking quality, touches and live visitors.",
  oauth: "OAuth 2.0 for partner apps: token exchange, revocation, merchant consent.",
  mcpOAuth: "OAuth for agents (MCP): discovery, dynamic registration, PKCE authorization, user tokens.",
  passwordPages: "The HTML set-password page of a one-time link.",
  collector: "The tracker's public collector and script (the tracking key is in the body or URL)."
}
