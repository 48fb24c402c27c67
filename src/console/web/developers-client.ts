/**
 * The /api/v1 operations of the Developers screen: the workspace's API keys (decision 0019),
 * webhook subscriptions, their delivery log and redelivery (decisions 0076-0078, 0112). Shapes as
 * openapi.json states them; a session names the profile with `?profile_id=`.
 */
import { request } from "./client.ts"

interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
}

/** Every page of a list (bounded: a console table, not an export). */
const allPages = async <A>(path: string, query: Record<string, string | undefined>, most = 20): Promise<ReadonlyArray<A>> => {
  const rows: Array<A> = []
  let cursor: string | undefined = undefined
  for (let page = 0; page < most; page++) {
    const answer: Page<A> = await request<Page<A>>(path, { query: { ...query, limit: 100, cursor } })
    rows.push(...answer.data)
    if (!answer.pagination.has_next || answer.pagination.cursor === null) break
    cursor = answer.pagination.cursor
  }
  return rows
}

// --- API keys ---------------------------------------------------------------------------------

export interface ApiKey {
  readonly id: string
  readonly workspace_id: string
  readonly profile_id: string
  readonly name: string
  readonly prefix: string
  readonly scopes: ReadonlyArray<string>
  readonly rate_limit_per_minute: number
  readonly status: "active" | "expired" | "revoked"
  readonly created_at: string
  readonly expires_at: string | null
  readonly revoked_at: string | null
}

/** Scopes of a new key when none are chosen (api-concepts.md, Scopes): the form starts with them ticked. */
export const DEFAULT_KEY_SCOPES: ReadonlyArray<string> = ["analytics:read", "campaigns:read", "conversions:read", "realtime:read"]

/** The workspace's keys bound to this profile (the list is the workspace's). */
export const profileKeys = async (workspaceId: string, profileId: string): Promise<ReadonlyArray<ApiKey>> =>
  (await allPages<ApiKey>(`/workspaces/${encodeURIComponent(workspaceId)}/api-keys`, {}))
    .filter((key) => key.profile_id === profileId)

export const createKey = (workspaceId: string, input: { readonly profile_id: string; readonly name: string; readonly scopes: ReadonlyArray<string> }) =>
  request<{ readonly data: ApiKey & { readonly key: string }; readonly meta?: { readonly withheld_scopes: ReadonlyArray<string> } }>(
    `/workspaces/${encodeURIComponent(workspaceId)}/api-keys`,
    { method: "POST", body: input }
  )

export const revokeKey = (workspaceId: string, keyId: string) =>
  request<{ readonly data: ApiKey }>(`/workspaces/${encodeURIComponent(workspaceId)}/api-keys/${encodeURIComponent(keyId)}/revoke`, {
    method: "POST"
  })

// --- Webhooks ---------------------------------------------------------------------------------

export interface WebhookSubscription {
  readonly id: string
  readonly url: string
  readonly description: string | null
  readonly event_types: ReadonlyArray<string>
  readonly status: "active" | "paused" | "disabled"
  readonly status_reason: string | null
  readonly created_at: string
}

export interface WebhookDelivery {
  readonly id: string
  readonly subscription_id: string
  readonly event_id: string
  readonly event_type: string
  readonly status: "pending" | "succeeded" | "failed"
  readonly attempts: number
  readonly next_attempt_at: string | null
  readonly last_attempt_at: string | null
  readonly last_status_code: number | null
  readonly last_error: string | null
  readonly redelivery_of: string | null
  readonly created_at: string
}

export interface WebhookAttempt {
  readonly delivery_id: string
  readonly attempt: number
  readonly attempted_at: string
  readonly status_code: number | null
  readonly duration_ms: number | null
  readonly error: string | null
  /** The start of the endpoint's answer (at most 1000 characters); null when none came or it was empty. */
  readonly response_body: string | null
}

/** Every event type (api-endpoints.md, Events); the lifecycle ones and leads are opt-in (decision 0076). */
export const WEBHOOK_EVENT_TYPES: ReadonlyArray<{ readonly type: string; readonly byDefault: boolean }> = [
  { type: "outcome.recorded", byDefault: true },
  { type: "order.status.changed", byDefault: true },
  { type: "message.received", byDefault: true },
  { type: "leadgen.received", byDefault: false },
  { type: "connection.connected", byDefault: false },
  { type: "connection.revoked", byDefault: false },
  { type: "connection.reconnect_required", byDefault: false },
  { type: "channel.health.updated", byDefault: false },
  { type: "experiment.completed", byDefault: false }
]

export const subscriptions = (profileId: string) =>
  allPages<WebhookSubscription>("/webhooks/subscriptions", { profile_id: profileId })

export const createSubscription = (profileId: string, input: { readonly url: string; readonly event_types: ReadonlyArray<string> }) =>
  request<{ readonly data: WebhookSubscription & { readonly secret: string } }>("/webhooks/subscriptions", {
    method: "POST",
    query: { profile_id: profileId },
    body: input
  })

/** A subscription's newest deliveries (the first page: the log is newest first). */
export const deliveries = (profileId: string, subscriptionId: string) =>
  request<Page<WebhookDelivery>>("/webhooks/deliveries", { query: { profile_id: profileId, subscription_id: subscriptionId, limit: 50 } })

export const attempts = (profileId: string, deliveryId: string) =>
  allPages<WebhookAttempt>(`/webhooks/deliveries/${encodeURIComponent(deliveryId)}/attempts`, { profile_id: profileId })

export const redeliver = (profileId: string, deliveryId: string) =>
  request<{ readonly data: WebhookDelivery }>(`/webhooks/deliveries/${encodeURIComponent(deliveryId)}/redeliver`, {
    method: "POST",
    query: { profile_id: profileId }
  })

// --- Request log ------------------------------------------------------------------------------

export interface RequestLogEntry {
  readonly id: string
  readonly request_id: string
  readonly method: string
  readonly path: string
  readonly route: string | null
  readonly status: number
  readonly duration_ms: number
  readonly principal_kind: "api_key" | "user_token" | "session"
  readonly key_id: string | null
  readonly created_at: string
}

/** The status classes the Requests section filters by (the API also takes an exact code). */
export const REQUEST_STATUS_CLASSES = ["2xx", "4xx", "5xx"] as const

/** One page of the profile's request log, newest first (decision 0130). */
export const requestLogs = (profileId: string, options: { readonly status: string | undefined; readonly cursor?: string }) =>
  request<Page<RequestLogEntry>>("/request-logs", {
    query: { profile_id: profileId, limit: 25, status: options.status, cursor: options.cursor }
  })
