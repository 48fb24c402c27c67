/**
 * Connection health of the sending channels (api-concepts.md "Connection health"; decision 0092):
 * a provider's refusal of an email send sets `needs_action` (the mailbox's standing: suspended,
 * disabled, out of quota) or `reconnect_required` (the grant died); the next send the provider
 * accepts clears it to `ok`. Each change, and only a change, leaves one `channel.health.updated`
 * outbox row in the same transaction: this is the event's single producer.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { OutboxRepo } from "../../kernel/outbox/repo.ts"
import { EmailSendRefused } from "../providers/email/port.ts"
import { ProviderAuthRevoked } from "../providers/errors.ts"
import type { ConnectionRecord } from "../repo.ts"
import { ConnectionHealthRepo, type HealthRow, type HealthState } from "./repo.ts"

export const CHANNEL_HEALTH_UPDATED = "channel.health.updated"

export interface HealthOutcome {
  readonly health: HealthState
  /** The refusal's code in the service's words (`account_suspended`, `auth_revoked`, ...); null when cleared. */
  readonly reason: string | null
  /** The provider's own code, when it gave one. */
  readonly providerCode: string | null
}

const CLEARED: HealthOutcome = { health: "ok", reason: null, providerCode: null }

/**
 * What a send's failure says about the connection; `none` when it says nothing about it (a
 * rejected recipient is the recipient's problem, an unreachable provider is transient).
 */
export const outcomeOfFailure = (error: unknown): Option.Option<HealthOutcome> => {
  if (error instanceof ProviderAuthRevoked) return Option.some({ health: "reconnect_required", reason: "auth_revoked", providerCode: "invalid_token" })
  if (!(error instanceof EmailSendRefused) || error.reason === "recipient_rejected") return Option.none()
  return Option.some({ health: "needs_action", reason: error.reason, providerCode: error.providerCode ?? error.reason })
}

const healthEvent = (connection: ConnectionRecord, previous: HealthState, row: HealthRow) => {
  const id = crypto.randomUUID()
  return {
    id,
    profileId: connection.profile_id,
    topic: CHANNEL_HEALTH_UPDATED,
    payload: {
      id,
      type: CHANNEL_HEALTH_UPDATED,
      created_at: new Date().toISOString(),
      data: {
        provider: connection.provider,
        connection_id: connection.id,
        provider_account_id: connection.external_account_id,
        profile_id: connection.profile_id,
        health: row.health,
        previous_health: previous,
        reason: row.reason,
        provider_code: row.provider_code,
        changed_at: row.changed_at
      },
      delivery: { profile_id: connection.profile_id, provisioned_by_app_id: connection.provisioned_by_app_id }
    }
  }
}

export class ConnectionHealth extends Context.Service<ConnectionHealth, {
  /** Sets the connection's health; a change (and only a change) emits `channel.health.updated`. */
  readonly record: (connection: ConnectionRecord, outcome: HealthOutcome) => Effect.Effect<void, DatabaseUnavailable>
  /** The connection's health (`ok` when no send ever decided it). */
  readonly of: (connectionId: string) => Effect.Effect<HealthState, DatabaseUnavailable>
  /**
   * Runs a send on `connection` and records what it says: accepted clears, a mailbox refusal or a
   * dead grant sets; the send's own answer or failure is passed on unchanged.
   */
  readonly observe: <A, E>(
    connection: ConnectionRecord,
    send: Effect.Effect<A, E>
  ) => Effect.Effect<A, E | DatabaseUnavailable>
}>()("svc/ConnectionHealth") {
  static readonly layer = Layer.effect(ConnectionHealth)(
    Effect.gen(function*() {
      const repo = yield* ConnectionHealthRepo
      const outbox = yield* OutboxRepo

      const record = Effect.fn("ConnectionHealth.record")(function*(connection: ConnectionRecord, outcome: HealthOutcome) {
        yield* repo.transaction(Effect.gen(function*() {
          // A refusal on a connection without a row creates it first: without a row, `FOR UPDATE`
          // locks nothing and two simultaneous first refusals would both see `ok` and both emit.
          if (outcome.health !== "ok") yield* repo.ensure(connection.id, connection.profile_id, connection.provider)
          const current = yield* repo.current(connection.id, true)
          const previous: HealthState = Option.match(current, { onNone: () => "ok", onSome: (row) => row.health })
          const sameReason = Option.match(current, { onNone: () => outcome.reason === null, onSome: (row) => row.reason === outcome.reason })
          // An accepted send on a healthy connection, or the same refusal again: nothing changes.
          if (previous === outcome.health && sameReason) return
          const row = yield* repo.save({
            connectionId: connection.id,
            profileId: connection.profile_id,
            provider: connection.provider,
            health: outcome.health,
            reason: outcome.reason,
            providerCode: outcome.providerCode
          })
          yield* outbox.insert([healthEvent(connection, previous, row)])
        }))
      })

      const of = Effect.fn("ConnectionHealth.of")(function*(connectionId: string) {
        const current = yield* repo.current(connectionId, false)
        return Option.match(current, { onNone: (): HealthState => "ok", onSome: (row) => row.health })
      })

      const observe = <A, E>(connection: ConnectionRecord, send: Effect.Effect<A, E>) =>
        send.pipe(
          Effect.tap(() => record(connection, CLEARED)),
          Effect.tapError((error) =>
            Option.match(outcomeOfFailure(error), { onNone: () => Effect.void, onSome: (outcome) => record(connection, outcome) })
          )
        )

      return { record, of, observe }
    })
  ).pipe(Layer.provide([ConnectionHealthRepo.layer, OutboxRepo.layer]))
}
