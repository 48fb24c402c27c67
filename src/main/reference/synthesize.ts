/**
 * Examples derived from the published JSON Schemas, for the bodies the reference does not
 * write out by hand: realistic values chosen by property name (ids, currencies, times,
 * amounts), bounded by the schema's own constraints. A test validates every example against
 * its schema, so a value that stops fitting a changed schema is caught.
 */

export type Node = Readonly<Record<string, unknown>>

export const isNode = (value: unknown): value is Node =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const str = (node: Node, key: string): string | undefined => {
  const value = node[key]
  return typeof value === "string" ? value : undefined
}
const num = (node: Node, key: string): number | undefined => {
  const value = node[key]
  return typeof value === "number" ? value : undefined
}

/** Fixed ids per name, so one example's `profile_id` is the next one's. */
export const ids = {
  profile: "5f0c7a1e-8b2d-4c3e-9a41-6d2f0b7e8c15",
  workspace: "0b9e2d64-3a7f-4e1c-8d25-91c4f6a0b3e7",
  app: "7c1d3e9a-2b4f-4a6e-9c8d-1e5f7a3b9d20",
  user: "3e8a5c1f-6d2b-4f9e-a7c4-0d1b8e6f2a93",
  apiKey: "9a4f6b2c-1e3d-4c7a-8b5e-2f0d9c6a1b84",
  customer: "c2d4e6f8-1a3b-4c5d-9e7f-0a1b2c3d4e5f",
  outcomeEvent: "e1f2a3b4-c5d6-4e7f-8a9b-0c1d2e3f4a5b",
  conversion: "a7b8c9d0-e1f2-4a3b-9c4d-5e6f7a8b9c0d",
  touch: "d4c3b2a1-f6e5-4d7c-8b9a-0f1e2d3c4b5a",
  generic: "2b7e4c1a-9d3f-4e6b-8a5c-7f1d0e9b3c62"
} as const

const ID_BY_NAME: Readonly<Record<string, string>> = {
  profile_id: ids.profile,
  workspace_id: ids.workspace,
  owner_workspace_id: ids.workspace,
  app_id: ids.app,
  oauth_app_id: ids.app,
  provisioned_by_app_id: ids.app,
  user_id: ids.user,
  api_key_id: ids.apiKey,
  rotated_from_id: "6d2f0b7e-8c15-4a41-9b2d-5f0c7a1e3c4e",
  customer_profile_id: ids.customer,
  survivor_customer_profile_id: ids.customer,
  merged_customer_profile_id: "f5e4d3c2-b1a0-4f9e-8d7c-6b5a4f3e2d1c",
  outcome_event_id: ids.outcomeEvent,
  conversion_id: ids.conversion,
  touch_id: ids.touch,
  replay_job_id: "4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d",
  job_id: "4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d"
}

/** Plausible values for a property of this name (used only where they fit the schema). */
const STRING_BY_NAME: Readonly<Record<string, string>> = {
  currency: "EUR",
  reporting_currency: "EUR",
  email: "ana.lopez@example.com",
  person_email: "ana.lopez@example.com",
  phone: "+34600123456",
  name: "Lopez Dental Madrid",
  display_name: "Ana Lopez",
  first_name: "Ana",
  last_name: "Lopez",
  external_ref: "merchant-4821",
  customer_key: "crm-10442",
  payer_customer_key: "crm-10443",
  external_id: "crm-10442",
  conversion_key: "purchase",
  event_name: "purchase",
  event_key: "purchase",
  event_type: "page_view",
  idempotency_key: "order-2026-000187",
  request_ref: "erasure-2026-0031",
  client_id: "svc_app_7c1d3e9a2b4f",
  client_secret: "svc_cs_3qT8vYk2Lm9Rb6Xw1Zp4Hn7Dc0Fg5Js",
  jwt_secret: "svc_jwt_W4e7Rt1Yu9Io3Pa6Sd8Fg2Hj5Kl0Zx",
  api_key: "svc_live_9Hq2Wm7Xc4Vb1Nz8Lk5Jp3Rt6Ys0Du",
  key: "svc_live_9Hq2…",
  prefix: "svc_live_9Hq2",
  access_token: "svc_live_9Hq2Wm7Xc4Vb1Nz8Lk5Jp3Rt6Ys0Du",
  token: "svc_user_5Fb8Nc2Mx7Qw4Ez1Ry9Tu6Io3Pa0Sd",
  tracking_key: "svc_tk_8Jd3Kf6Lg9Mh2Nb5",
  token_type: "bearer",
  time_zone: "Europe/Madrid",
  channel: "paid_search",
  source: "google",
  medium: "cpc",
  utm_source: "google",
  utm_medium: "cpc",
  utm_campaign: "spring_implants",
  hostname: "t.lopezdental.example",
  url: "https://lopezdental.example/implants?utm_source=google&utm_medium=cpc",
  landing_url: "https://lopezdental.example/booking",
  return_url: "https://partner.example/connected",
  redirect_uri: "https://partner.example/oauth/callback",
  origin: "https://lopezdental.example",
  collector_url: "http://localhost:8080/t/collect",
  default_collector_url: "http://localhost:8080/t/collect",
  base_url: "http://localhost:8080",
  sign_in_url: "http://localhost:8080/account/password?token=pl_2Xk9Qw4Rt7",
  docs_url: "http://localhost:8080/docs/errors#not_found",
  path: "/implants",
  referrer_domain: "google.com",
  device: "desktop",
  browser: "Chrome",
  os: "Windows",
  country: "ES",
  city: "Madrid",
  anonymous_id: "anon_6f1e2d3c4b5a",
  session_id: "sess_1a2b3c4d",
  click_id_kind: "gclid",
  platform_id: "120210000000001",
  ad_external_id: "120210000000003",
  ad_id: "120210000000003",
  wa_id: "34600123456",
  wamid: "wamid.HBgLMzQ2MDAxMjM0NTYVAgASGBQzRUIw",
  message: "Done.",
  reason: "duplicate order",
  description: "Lead form submitted",
  request_id: "req_5b0d6c2e8f1a",
  cursor: "eyJrIjoiMjAyNi0xMS0wMiJ9",
  state: "af0ifjsldkj",
  code: "ac_9f8e7d6c5b4a",
  code_verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
  code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
  dimension: "channel",
  version: "2026-09-01",
  scope: "connections:read connections:write",
  level: "campaign",
  model: "last_touch",
  credit_model: "last_touch",
  provider: "adplatform",
  status_reason: "token_expired",
  amount: "120.00",
  value: "120.00",
  value_amount: "120.00",
  spend: "450.00",
  revenue: "1320.00",
  credited_revenue: "1320.00",
  outcome_value: "1320.00",
  cac: "56.25",
  cac_first_payment: "75.00",
  roas: "2.93",
  credit_share: "1",
  start: "2026-10-04",
  end: "2026-11-02",
  credited_conversions: "12.5",
  campaign: "120210000000001",
  ad_set: "120210000000002",
  ad: "120210000000003",
  api_scope: "analytics:read",
  withheld_scope: "customers:read",
  password: "correct horse battery staple",
  password_confirmation: "correct horse battery staple",
  csrf_token: "csrf_4Rt7Yu1Io9Pa"
}

/** Nullable fields that are null in the common case (a live key has no `revoked_at`). */
const USUALLY_NULL = new Set([
  "revoked_at", "rotated_from_id", "expires_at", "unavailable_reason", "reporting_unavailable_reason", "status_reason",
  "oauth_app_id", "archived_at", "snoozed_until", "undone_at", "decided_at", "error", "finished_at"
])

const DATE = "2026-11-02"
const DATE_TIME = "2026-11-02T10:15:00.000Z"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Candidate strings for a schema, tried in order until one fits its constraints. */
const stringCandidates = (node: Node, name: string | undefined): ReadonlyArray<string> => {
  const format = str(node, "format")
  const pattern = str(node, "pattern") ?? ""
  const out: Array<string> = []
  const byName = name === undefined ? undefined : ID_BY_NAME[name] ?? STRING_BY_NAME[name]
  if (byName !== undefined) out.push(byName)
  if (format === "uuid" || pattern.includes("[0-9a-fA-F]{8}") || (name !== undefined && /(^|_)id$/.test(name))) {
    out.push(ids.generic)
  }
  if (format === "date" || pattern.includes("02-29)$")) out.push(DATE)
  if (format === "date-time" || pattern.includes("(?:T(") || (name !== undefined && /_at$|^at$|_until$/.test(name))) {
    out.push(DATE_TIME)
  }
  if (pattern.includes("\\d{5,20}")) out.push("123456789012345")
  if (pattern.startsWith("^(?:0|[1-9]") || pattern.startsWith("^(?:[1-9]")) out.push("30", "7", "1")
  if (name !== undefined && /_url$|^url$/.test(name)) out.push("https://lopezdental.example/")
  if (name !== undefined) out.push(name.replace(/_/g, "-"))
  out.push("example")
  return out
}

const fits = (node: Node, value: string): boolean => {
  const min = num(node, "minLength")
  const max = num(node, "maxLength")
  const pattern = str(node, "pattern")
  if (min !== undefined && value.length < min) return false
  if (max !== undefined && value.length > max) return false
  if (pattern !== undefined && !new RegExp(pattern, "u").test(value)) return false
  if (str(node, "format") === "uuid" && !UUID.test(value)) return false
  return true
}

const NUMBER_BY_NAME: Readonly<Record<string, number>> = {
  rate_limit_per_minute: 60,
  rate_limit_units_per_minute: 120,
  lookback_window_days: 30,
  days: 30,
  limit: 50,
  expires_in: 3600,
  expires_in_days: 90,
  retry_after_seconds: 30,
  status_code: 200,
  last_status_code: 200,
  duration_ms: 182,
  attempt: 1,
  value: 120,
  amount: 120,
  total: 1200,
  progress: 1200,
  uptime_seconds: 86400,
  collector_lag_ms: 180,
  // The lookalike's only ratio: 1 %.
  ratio: 0.01
}

const numberFor = (node: Node, name: string | undefined, integer: boolean): number => {
  const min = num(node, "minimum") ?? num(node, "exclusiveMinimum")
  const max = num(node, "maximum") ?? num(node, "exclusiveMaximum")
  let value = (name === undefined ? undefined : NUMBER_BY_NAME[name]) ??
    (name !== undefined && /ratio|share|rate$/.test(name) ? 0.42 : name !== undefined && /count|total|touches|visitors/.test(name) ? 12 : 3)
  if (integer) value = Math.round(value)
  if (min !== undefined && value < min) value = integer ? Math.ceil(min) + (num(node, "exclusiveMinimum") === undefined ? 0 : 1) : min
  if (max !== undefined && value > max) value = integer ? Math.floor(max) : max
  return value
}

export class Synthesizer {
  readonly #schemas: Node

  constructor(spec: Node) {
    const components = spec["components"]
    const schemas = isNode(components) ? components["schemas"] : undefined
    this.#schemas = isNode(schemas) ? schemas : {}
  }

  /** An example value for `schema`; `name` is the property (or parameter) it stands for. */
  example(schema: unknown, name?: string, depth = 0): unknown {
    if (!isNode(schema) || depth > 12) return null
    const ref = str(schema, "$ref")
    if (ref !== undefined) {
      const target = this.#schemas[ref.replace("#/components/schemas/", "")]
      // A `$ref` beside its own constraints (`type` and `$ref`) is the referenced schema.
      return this.example(isNode(target) ? { ...target, ...withoutRef(schema) } : {}, name, depth + 1)
    }
    if ("const" in schema) return schema["const"]
    const values = schema["enum"]
    if (Array.isArray(values) && values.length > 0) return values.find((value) => value !== null) ?? values[0]
    for (const key of ["anyOf", "oneOf"]) {
      const options = schema[key]
      if (Array.isArray(options) && options.length > 0) {
        // Prefer the option that shows a value over `null`.
        const isNull = (option: unknown) => isNode(option) && option["type"] === "null"
        const chosen = (name !== undefined && USUALLY_NULL.has(name) ? options.find(isNull) : undefined) ??
          options.find((option) => !isNull(option)) ?? options[0]
        return this.example(chosen, name, depth + 1)
      }
    }
    // Constraints carried in `allOf` (a literal union refining a string) decide the value.
    const parts = schema["allOf"]
    const literal = Array.isArray(parts) ? parts.find((part) => isNode(part) && ("enum" in part || "const" in part)) : undefined
    if (literal !== undefined) return this.example(literal, name, depth + 1)
    const type = pickType(schema)
    if (type === undefined) {
      if (Array.isArray(parts) && parts.length > 0) return this.example(parts[0], name, depth + 1)
      return name === undefined ? {} : STRING_BY_NAME[name] ?? {}
    }
    switch (type) {
      case "null":
        return null
      case "boolean":
        return name !== undefined && /^(is_|has_)?(revoked|archived|deleted|disabled|bot|ignored_stale|has_next|has_more)/.test(name)
          ? false
          : true
      case "integer":
        return numberFor(schema, name, true)
      case "number":
        return numberFor(schema, name, false)
      case "string":
        return stringCandidates(schema, name).find((candidate) => fits(schema, candidate)) ?? "example"
      case "array": {
        const tuple = schema["prefixItems"]
        if (Array.isArray(tuple)) return tuple.map((item) => this.example(item, singular(name), depth + 1))
        const min = num(schema, "minItems") ?? 1
        const item = this.example(schema["items"], singular(name), depth + 1)
        return Array.from({ length: Math.max(1, min) }, () => item)
      }
      default:
        return this.object(schema, depth)
    }
  }

  object(schema: Node, depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    const properties = schema["properties"]
    if (isNode(properties)) {
      for (const [key, property] of Object.entries(properties)) out[key] = this.example(property, key, depth + 1)
    }
    return out
  }
}

const withoutRef = (node: Node): Node => Object.fromEntries(Object.entries(node).filter(([key]) => key !== "$ref"))

const pickType = (schema: Node): string | undefined => {
  const type = schema["type"]
  if (typeof type === "string") return type
  if (Array.isArray(type)) return type.find((item): item is string => typeof item === "string" && item !== "null")
  if (isNode(schema["properties"])) return "object"
  return undefined
}

const singular = (name: string | undefined): string | undefined => {
  if (name === undefined) return undefined
  if (name === "scopes" || name === "api_key_scopes") return "api_scope"
  if (name.endsWith("ies")) return `${name.slice(0, -3)}y`
  return name.endsWith("s") ? name.slice(0, -1) : name
}
