/** Scopes, connect scopes and MCP grants, exactly as the specification's tables. No I/O. */
import { Schema } from "effect"

export const Scopes = [
  "analytics:read",
  "campaigns:read",
  "conversions:read",
  "realtime:read",
  "customers:read",
  "visitors:read",
  "commerce:read",
  "commerce:live",
  "exports:read",
  "exports:write",
  "workspaces:write",
  "profiles:write",
  "events:write",
  "goals:write",
  "attribution:write",
  "tracking:write",
  "reports:write",
  "campaigns:apply",
  "creatives:write",
  "connections:read",
  "connections:write",
  "calendar.read",
  "calendar",
  "calendar.manage",
  "chat_app_a",
  "chat_app_a:read",
  "social_dm",
  "page_messenger",
  "short_video_messaging",
  "email",
  "conversations:read",
  "conversations:write"
] as const
export type Scope = (typeof Scopes)[number]
export const Scope = Schema.Literals(Scopes)

/** Scopes of a new key when none are asked for. */
export const DEFAULT_KEY_SCOPES: ReadonlyArray<Scope> = ["analytics:read", "campaigns:read", "conversions:read", "realtime:read"]

/** Scopes that expose personal data; withheld from healthcare-family profiles (S5.1: the first two). */
export const PERSON_SCOPES: ReadonlyArray<Scope> = ["customers:read", "visitors:read"]

const ANALYTICS: ReadonlyArray<Scope> = ["analytics:read", "campaigns:read", "conversions:read", "realtime:read"]
const CONNECTIONS: ReadonlyArray<Scope> = ["connections:read", "connections:write"]

export const ConnectScopes = [
  "connections",
  "attribution",
  "analytics",
  "analytics_pii",
  "attribution_write",
  "commerce",
  "chat_app_a",
  "social_dm",
  "email",
  "calendar",
  "calendar_read"
] as const
export type ConnectScope = (typeof ConnectScopes)[number]
export const ConnectScope = Schema.Literals(ConnectScopes)

/** What each connect scope mints (the spec's "Connect scopes (OAuth apps)" table). */
export const scopesOfConnectScope: Record<ConnectScope, ReadonlyArray<Scope>> = {
  connections: CONNECTIONS,
  attribution: [
    ...ANALYTICS,
    "customers:read",
    "visitors:read",
    "goals:write",
    "attribution:write",
    "tracking:write",
    "reports:write",
    "exports:read",
    "exports:write",
    "events:write",
    "campaigns:apply",
    "creatives:write",
    ...CONNECTIONS
  ],
  analytics: ANALYTICS,
  analytics_pii: [...ANALYTICS, "customers:read", "visitors:read"],
  attribution_write: ["goals:write", "attribution:write", "tracking:write", "reports:write"],
  commerce: ["commerce:read", "commerce:live"],
  chat_app_a: ["chat_app_a"],
  social_dm: ["social_dm"],
  email: ["email"],
  calendar: ["calendar", "calendar.manage", "calendar.read"],
  calendar_read: ["calendar.read"]
}

export const scopesOfConnectScopes = (connectScopes: ReadonlyArray<ConnectScope>): ReadonlyArray<Scope> => [
  ...new Set(connectScopes.flatMap((scope) => scopesOfConnectScope[scope]))
]

export const McpGrants = ["mcp:read", "mcp:read_pii", "mcp:write"] as const
export type McpGrant = (typeof McpGrants)[number]

/** What each MCP grant gives a user token (before the intersection with the person's membership). */
export const scopesOfMcpGrant: Record<McpGrant, ReadonlyArray<Scope>> = {
  "mcp:read": ANALYTICS,
  "mcp:read_pii": ["customers:read"],
  "mcp:write": [
    "exports:read",
    "exports:write",
    "goals:write",
    "attribution:write",
    "tracking:write",
    "reports:write",
    "workspaces:write",
    "profiles:write",
    "campaigns:apply"
  ]
}

const isMcpGrant = (value: string): value is McpGrant => (McpGrants as ReadonlyArray<string>).includes(value)

export const scopesOfMcpGrants = (grants: ReadonlyArray<string>): ReadonlyArray<Scope> => [
  ...new Set(grants.filter(isMcpGrant).flatMap((grant) => scopesOfMcpGrant[grant]))
]

/** S5: a profile whose workspace is a healthcare agency, or that exports in a healthcare privacy mode. */
export const isHealthcareFamily = (settings: { readonly privacy_mode: string; readonly is_healthcare_agency: boolean }): boolean =>
  settings.is_healthcare_agency || settings.privacy_mode === "platform_safe" || settings.privacy_mode === "hipaa"

/** S5.1: keys on healthcare-family profiles never carry the person scopes. */
export const withholdPersonScopes = (scopes: ReadonlyArray<Scope>, healthcare: boolean): ReadonlyArray<Scope> =>
  healthcare ? scopes.filter((scope) => !PERSON_SCOPES.includes(scope)) : scopes

/** The scopes a key minted under these connect scopes may hold on a (healthcare-family or not) profile. */
export const mintableScopes = (connectScopes: ReadonlyArray<ConnectScope>, healthcare: boolean): ReadonlyArray<Scope> =>
  withholdPersonScopes(scopesOfConnectScopes(connectScopes), healthcare)
