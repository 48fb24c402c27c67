/**
 * Provider callbacks (`POST /hooks/{provider}`): the signature checked over the raw body under
 * the provider app's secret (src/connections/providers/signing.ts), each event handled once per provider
 * event id (`provider_events`, claimed in the transaction that writes what it causes). The ad
 * platform's lead-form submissions become `leadgen.received`; grant deaths mark the account's
 * connections `reconnect_required`; CRM deals at mapped stages become outcomes (decision 0062).
 * Other kinds (orders, messages) are recorded so their issues can plug in.
 */
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { type DatabaseUnavailable, InvalidRequest, NotFound, ServiceUnavailable, Unauthorized } from "../../../schema/errors.ts"
import { OutboxRepo } from "../../kernel/outbox/repo.ts"
import { AdPlatform } from "../providers/adplatform/port.ts"
import { ProviderEndpoints } from "../providers/endpoints.ts"
import { verifyCallback } from "../providers/signing.ts"
import { isProviderKind, type ProviderKind } from "../providers/registry.ts"
import { leadgenEvent, MESSAGE_RECEIVED, messageReceivedEvent } from "../events.ts"
import { parseDeliveryReport } from "../providers/email/dsn.ts"
import { type ConnectionRecord, ConnectionsRepo } from "../repo.ts"
import { ConnectionSessions, factsOf } from "../sessions.ts"
import { SANDBOX_WORLD_HEADER } from "../providers/sandbox-world.ts"
import { PushWorld } from "./push-world.ts"
import { type PushedMessage, PushReceivers } from "./receivers.ts"
import { ProviderEventsRepo } from "./repo.ts"

/** One event a callback carries. */
export type HookEvent =
  | { readonly kind: "leadgen"; readonly eventId: string; readonly accountId: string; readonly value: Readonly<Record<string, unknown>> }
  | { readonly kind: "grant_revoked"; readonly eventId: string; readonly accountId: string }
  | { readonly kind: "other"; readonly eventId: string; readonly accountId: string | null; readonly body?: Json }

type Json = Readonly<Record<string, unknown>>

const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)
const text = (value: unknown): string | null =>
  typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : null

/**
 * The events of a callback body. The ad-platform family sends `{object, entry: [{id, time,
 * changes: [{field, value}]}]}` (a `leadgen` change names `leadgen_id`, a `deauthorize` change is a
 * grant death); the others send one
 * event object (`{event, id | event_id, account_id, ...}`); a grant death is
 * `{event: "grant_revoked", account_id, user_id, time}` or `{id, type: "grant.revoked", account_id, ...}`.
 */
/** The flat grant-death event names: the generic sandbox's, the CRM's and card gateway's (`grant.revoked`). */
const GRANT_DEATHS = new Set(["grant_revoked", "grant.revoked", "deauthorize", "app.uninstalled", "account.application.deauthorized"])

export const eventsOf = (body: Json): ReadonlyArray<HookEvent> => {
  const entries = body["entry"]
  if (Array.isArray(entries)) {
    return entries.flatMap((entry: unknown): ReadonlyArray<HookEvent> => {
      if (!isRecord(entry)) return []
      const entryAccount = text(entry["id"])
      const changes = Array.isArray(entry["changes"]) ? entry["changes"] : []
      return changes.flatMap((change: unknown): ReadonlyArray<HookEvent> => {
        if (!isRecord(change) || !isRecord(change["value"])) return []
        const value = change["value"]
        const accountId = text(value["account_id"]) ?? text(value["ad_account_id"]) ?? entryAccount
        const leadgenId = text(value["leadgen_id"])
        if (change["field"] === "leadgen" && leadgenId !== null && accountId !== null) {
          return [{ kind: "leadgen", eventId: leadgenId, accountId, value }]
        }
        // The ad-platform family's grant death: `{object: "permissions", entry: [{id, time, changes: [{field: "deauthorize", value: {user_id}}]}]}`.
        if (change["field"] === "deauthorize" && accountId !== null) {
          const eventId = `deauthorize:${accountId}:${text(value["user_id"]) ?? ""}:${text(entry["time"]) ?? ""}`
          return [{ kind: "grant_revoked", eventId, accountId }]
        }
        const id = text(value["event_id"]) ?? text(value["id"])
        return id === null ? [] : [{ kind: "other", eventId: `${String(change["field"])}:${id}`, accountId }]
      })
    })
  }
  const accountId = text(body["account_id"])
  const event = text(body["event"]) ?? text(body["type"]) ?? text(body["topic"])
  if (GRANT_DEATHS.has(event ?? "") && accountId !== null) {
    const id = text(body["event_id"]) ?? text(body["id"]) ??
      `${event}:${accountId}:${text(body["user_id"]) ?? ""}:${text(body["time"]) ?? ""}`
    return [{ kind: "grant_revoked", eventId: id, accountId }]
  }
  const id = text(body["event_id"]) ?? text(body["id"])
  return id === null ? [] : [{ kind: "other", eventId: id, accountId, body }]
}

export class ProviderHooks extends Context.Service<ProviderHooks, {
  readonly receive: (
    provider: string,
    headers: Readonly<Record<string, string | undefined>>,
    rawBody: string
  ) => Effect.Effect<
    { readonly fresh: boolean },
    NotFound | Unauthorized | InvalidRequest | ServiceUnavailable | DatabaseUnavailable
  >
}>()("svc/ProviderHooks") {
  static readonly layer = Layer.effect(ProviderHooks)(
    Effect.gen(function*() {
      const endpoints = yield* ProviderEndpoints
      const events = yield* ProviderEventsRepo
      const connections = yield* ConnectionsRepo
      const outbox = yield* OutboxRepo
      const sessions = yield* ConnectionSessions
      const adplatform = yield* AdPlatform
      // Commerce, payments and CRM outcomes (ingestion) and the inbox (messaging), above connections.
      const receivers = yield* PushReceivers

      /** The lead as the platform holds it, fetched on one of the account's connections; the webhook value when none can. */
      const fetchLead = (provider: ProviderKind, live: ReadonlyArray<ConnectionRecord>, leadgenId: string) =>
        Effect.gen(function*() {
          for (const record of live) {
            const lead = yield* sessions.session(record.id).pipe(
              Effect.flatMap((session) => adplatform.getLead(session, leadgenId)),
              Effect.map((found): Json | null => ({ ...found })),
              Effect.catch((error): Effect.Effect<Json | null, DatabaseUnavailable | ServiceUnavailable> => {
                switch (error._tag) {
                  case "DatabaseUnavailable":
                    return Effect.fail(error)
                  case "ProviderAuthRevoked":
                    return Effect.as(sessions.reportAuthRevoked(record.id), null)
                  case "ProviderUnavailable":
                  case "ProviderThrottled":
                    // Answered 503: the provider delivers the callback again later.
                    return Effect.fail(
                      new ServiceUnavailable({
                        message: `The ${provider} lead could not be read now; deliver again later.`,
                        reason: "provider_unavailable",
                        retry_after_seconds: 30
                      })
                    )
                  default:
                    return Effect.succeed(null)
                }
              })
            )
            if (lead !== null) return lead
          }
          return null
        })

      const handle = (provider: ProviderKind, event: HookEvent, body: Json) =>
        Effect.gen(function*() {
          if (yield* events.seen(provider, event.eventId)) return false
          switch (event.kind) {
            case "leadgen": {
              const live = yield* connections.liveForAccount(provider, event.accountId)
              // Only the ad platform serves leads; the other kinds' lead events keep the webhook value.
              const lead = live.length === 0 || provider !== "adplatform" ? null : yield* fetchLead(provider, live, event.eventId)
              // One row per profile holding the account (a profile may hold it once).
              const profiles = new Map(live.map((record) => [record.profile_id, record] as const))
              return yield* events.transaction(Effect.gen(function*() {
                const claimed = yield* events.claim(provider, event.eventId, live[0]?.id ?? null)
                if (!claimed) return false
                yield* outbox.insert([...profiles.values()].map((record) =>
                  leadgenEvent(crypto.randomUUID(), event.eventId, factsOf(record), { ...event.value, ...(lead ?? {}) })
                ))
                return true
              }))
            }
            case "grant_revoked": {
              const live = yield* connections.liveForAccount(provider, event.accountId)
              return yield* events.transaction(Effect.gen(function*() {
                const claimed = yield* events.claim(provider, event.eventId, live[0]?.id ?? null)
                if (!claimed) return false
                for (const record of live) yield* sessions.reportAuthRevoked(record.id, "grant_revoked")
                return true
              }))
            }
            case "other": {
              // An inbound message (a bounce included): one `message.received` per profile holding the mailbox or account.
              if (event.body !== undefined && event.accountId !== null && text(event.body["event"]) === MESSAGE_RECEIVED) {
                const inbound = event.body
                const live = yield* connections.liveForAccount(provider, event.accountId)
                const profiles = new Map(live.map((record) => [record.profile_id, record] as const))
                return yield* events.transaction(Effect.gen(function*() {
                  const claimed = yield* events.claim(provider, event.eventId, live[0]?.id ?? null)
                  if (!claimed) return false
                  yield* outbox.insert([...profiles.values()].map((record) =>
                    messageReceivedEvent(provider, factsOf(record), inbound, parseDeliveryReport)
                  ))
                  return true
                }))
              }
              // Recorded before the id is claimed: the CRM's outcome keys make a redelivery after a crash write nothing twice.
              if (provider === "crm" && event.accountId !== null && event.body !== undefined) {
                yield* receivers.crmDeal(event.accountId, event.body)
              }
              // A card-gateway payment is recorded first (idempotent by its payment id), then its event id claimed.
              if (provider === "cardgw") yield* receivers.cardPayment(body)
              return yield* events.claim(provider, event.eventId, null)
            }
          }
        })

      /** `message.received` for a message of a nested push; the claimed id `message:<id>` makes a redelivery write nothing. */
      const nestedMessage = (provider: ProviderKind, pushed: PushedMessage) =>
        Effect.gen(function*() {
          const eventId = `message:${pushed.messageId}`
          if (yield* events.seen(provider, eventId)) return false
          const live = yield* connections.liveForAccount(provider, pushed.accountId)
          const profiles = new Map(live.map((record) => [record.profile_id, record] as const))
          // The flat shape `messageReceivedEvent` reads (`{timestamp, data: {...}}`).
          const flat: Json = {
            ...(pushed.seen.timestamp === null ? {} : { timestamp: pushed.seen.timestamp }),
            data: {
              message_id: pushed.messageId,
              conversation_id: pushed.seen.conversationId,
              from: pushed.seen.from,
              to: pushed.seen.to,
              text: pushed.seen.text
            }
          }
          return yield* events.transaction(Effect.gen(function*() {
            const claimed = yield* events.claim(provider, eventId, live[0]?.id ?? null)
            if (!claimed) return false
            yield* outbox.insert([...profiles.values()].map((record) =>
              messageReceivedEvent(provider, factsOf(record), flat, parseDeliveryReport)
            ))
            return true
          }))
        })

      const receive = Effect.fn("ProviderHooks.receive")(function*(
        provider: string,
        headers: Readonly<Record<string, string | undefined>>,
        rawBody: string
      ) {
        if (!isProviderKind(provider) || !endpoints.offered(provider)) {
          return yield* new NotFound({ message: `Unknown provider "${provider}".`, reason: "unknown_provider" })
        }
        const secret = Redacted.value(endpoints.endpoint(provider).clientSecret)
        if (!verifyCallback(provider, secret, headers, rawBody)) {
          return yield* new Unauthorized({ message: "The callback's signature is missing or does not match.", reason: "bad_signature" })
        }
        // A sandbox push names its world (decision 0109): it reaches that profile's connections only,
        // and its event ids are that world's (every world numbers its objects alike).
        let world: string | undefined
        if (Option.isSome(endpoints.sandboxWorlds)) {
          const named = headers[SANDBOX_WORLD_HEADER]
          world = named === undefined ? undefined : endpoints.sandboxWorlds.value.profileOf(named)
          if (world === undefined) {
            return yield* new Unauthorized({ message: "The callback names no sandbox world of this service.", reason: "bad_signature" })
          }
        }
        const parsed: unknown = yield* Effect.try({ try: () => JSON.parse(rawBody), catch: () => null }).pipe(
          Effect.orElseSucceed(() => null)
        )
        if (!isRecord(parsed)) return yield* new InvalidRequest({ message: "The callback body is not a JSON object." })
        return yield* dispatch(provider, parsed).pipe(Effect.provideService(PushWorld, { profileId: world }))
      })

      const dispatch = (provider: ProviderKind, parsed: Json) =>
        Effect.gen(function*() {
        // The commerce platform's orders and uninstalls (src/ingestion/commerce/orders/hooks.ts).
        if (provider === "commerce") return { fresh: yield* receivers.commerce(parsed) }
        // Recorded in the inbox first, idempotent by message id: a redelivery records nothing twice.
        const pushes = yield* receivers.messages(provider, parsed)
        let fresh = false
        // The nested `{object, entry: [...]}` pushes (social, page, chat kinds) carry their messages
        // inside entries; each becomes one `message.received`, once per message id.
        if (Array.isArray(parsed["entry"])) {
          for (const pushed of pushes) {
            if (yield* nestedMessage(provider, pushed)) fresh = true
          }
        }
        for (const event of eventsOf(parsed)) {
          if (yield* handle(provider, event, parsed)) fresh = true
        }
        return { fresh }
        })

      return { receive }
    })
  ).pipe(Layer.provide([ProviderEventsRepo.layer, ConnectionsRepo.layer, OutboxRepo.layer, ConnectionSessions.layer]))
}
