/**
 * The `connection.*` events (api-endpoints.md, Events), as outbox rows in the style of
 * `outcome.recorded`: `topic` is the event name, `payload` the event (`id`, `type`,
 * `created_at`, `data` with `provider`) and the `delivery` facts the webhooks issue reads.
 */
import type { NewOutboxRow } from "../events/outbox/repo.ts"

export const CONNECTION_CONNECTED = "connection.connected"
export const CONNECTION_REVOKED = "connection.revoked"
export const CONNECTION_RECONNECT_REQUIRED = "connection.reconnect_required"
export const LEADGEN_RECEIVED = "leadgen.received"

export type ConnectionTopic = typeof CONNECTION_CONNECTED | typeof CONNECTION_REVOKED | typeof CONNECTION_RECONNECT_REQUIRED

export interface ConnectionFacts {
  readonly profileId: string
  readonly connectionId: string
  readonly provider: string
  readonly accountId: string | null
  readonly provisionedByAppId: string | null
}

export const connectionEvent = (topic: ConnectionTopic, facts: ConnectionFacts, reason?: string): NewOutboxRow => {
  const id = crypto.randomUUID()
  return {
    id,
    profileId: facts.profileId,
    topic,
    payload: {
      id,
      type: topic,
      created_at: new Date().toISOString(),
      data: {
        provider: facts.provider,
        connection_id: facts.connectionId,
        provider_account_id: facts.accountId,
        profile_id: facts.profileId,
        ...(reason === undefined ? {} : { reason })
      },
      delivery: { profile_id: facts.profileId, provisioned_by_app_id: facts.provisionedByAppId }
    }
  }
}

/**
 * `leadgen.received`: the event id is the platform's `leadgen_id` (so the row id is derived from
 * it per profile and a redelivery cannot add a second row); `data` is the lead merged over the
 * webhook value, plus `profile_id`.
 */
export const leadgenEvent = (
  rowId: string,
  leadgenId: string,
  facts: ConnectionFacts,
  data: Readonly<Record<string, unknown>>
): NewOutboxRow => ({
  id: rowId,
  profileId: facts.profileId,
  topic: LEADGEN_RECEIVED,
  payload: {
    id: leadgenId,
    type: LEADGEN_RECEIVED,
    created_at: new Date().toISOString(),
    data: { ...data, profile_id: facts.profileId },
    delivery: { profile_id: facts.profileId, provisioned_by_app_id: facts.provisionedByAppId, connection_id: facts.connectionId }
  }
})
