/**
 * Webhook delivery (decision 0078): the outbox fanned out to durable delivery rows in order,
 * and the worker that signs and posts them on the 24-hour ladder.
 *
 * - Fan-out: up to `batchSize` (200) unpublished outbox rows, oldest first, are claimed (SKIP
 *   LOCKED), one delivery row per matching subscription is written with the batch's id and the
 *   row's position, and the rows get `published_at`, all in one transaction: a crash leaves
 *   either all of it or none.
 * - Batches (issue 34): a delivery's batch is the producer's enqueued batch (the outbox rows one
 *   transaction wrote: a batch ingest, a sync page), taken whole by one fan-out. Order holds within
 *   it only (api-endpoints.md); unrelated events to one subscription go out concurrently, up to
 *   `perSubscription` at once per process.
 * - Attempts: only the head of a (subscription, batch) (`ready`) is claimed, under a lease (its
 *   token fences the result); recording its end makes the next row the head: order within a
 *   batch holds even across retries. A success goes on with its batch (decision 0121): the
 *   statement that records it leases the next row to the same attempt, which sends it without a
 *   claim, up to `run` rows in a row, while the subscription keeps its URL and secret. The lease is short and the worker's heartbeat renews every
 *   row it holds in one statement (decision 0119): a runner that dies leaves leases that expire
 *   within seconds, and another takes the rows over. Delivery is at least once: the stable `webhook-id` lets a receiver drop a repeat.
 * - Results are written together, every `settleInterval`, one statement for all that ended
 *   meanwhile; an attempt holds its slot (and its row its lease) until its result is written, so
 *   a crash repeats only requests that were in flight.
 * - The ladder: attempts at about 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 24 h after the first
 *   attempt (a pause does not use the ladder up), jittered; a `Retry-After` pushes the next attempt later, never
 *   sooner. 2xx succeeds; 410 fails the row and disables the subscription; anything else
 *   (including a redirect, a refused target, a timeout) waits for the next step, and after the
 *   last one the row fails.
 * - The attempt log (decision 0112): each recorded result appends the attempt (time, status code,
 *   duration, error) in the same statement; the log of an event to a subscription includes its
 *   redeliveries.
 */
import { Cause, Context, Deferred, Duration, Effect, Exit, Layer, Option, Queue } from "effect"
import { type DatabaseUnavailable, type InvalidParameter, NotFound } from "../../../schema/errors.ts"
import type { WebhookDeliveriesQuery, WebhookDelivery, WebhookDeliveryAttempt, WebhookDeliveryAttemptsQuery } from "../../../schema/webhooks.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { OutboxRepo, type UnpublishedRow } from "../../kernel/outbox/repo.ts"
import { AppConfig } from "../../platform/config.ts"
import { pageOf, parseCursor, toPage } from "../../platform/pagination.ts"
import { SecretBox } from "../../platform/secret-box.ts"
import { isUuid } from "../../../schema/common.ts"
import { type FanOutSubscription, type SubscriptionRow, WebhookSubscriptionsRepo } from "../subscriptions/repo.ts"
import { send } from "../../platform/outbound-http.ts"
import { parseAllowList, resolveCache } from "../../platform/public-host.ts"
import { type AttemptRecord, type AttemptRow, type Busy, type DeliveryRow, type NewDelivery, type Settled, type Settlement, WebhookDeliveriesRepo } from "./repo.ts"
import { signedHeaders } from "./signing.ts"
import { withLinkedJobSpan } from "../../platform/tracing.ts"
import { defaultLease, heartbeat } from "../../platform/lease.ts"

export interface WebhookSettingsShape {
  /** Run the background fibers. Off: nothing runs unless `drainOnce` is called. */
  readonly enabled: boolean
  readonly pollInterval: Duration.Duration
  /**
   * How long a claimed delivery stays ours without a renewal: the worker's heartbeat renews what it
   * holds every third of it (decision 0119), so an attempt may run longer, and a dead process's
   * deliveries are taken over within seconds.
   */
  readonly lease: Duration.Duration
  /** Outbox rows per fan-out batch (the spec's "enqueued batch of up to 200"). */
  readonly batchSize: number
  /** Deliveries attempted at once by one process (each claim takes at most the free slots). */
  readonly concurrency: number
  /**
   * Deliveries to one subscription attempted at once by one process: a slow endpoint holds at most
   * this many slots, and a fast one is not held to one request per round trip.
   */
  readonly perSubscription: number
  /** How long a result waits to be written with the others that ended meanwhile (one statement for all). */
  readonly settleInterval: Duration.Duration
  /**
   * How many rows of one (subscription, batch) an attempt sends one after another, each leased by
   * the statement that records the one before (no claim between them), before it hands the batch
   * on to the next claim, where other subscriptions' heads wait their turn.
   */
  readonly run: number
  /** When each attempt is due, from the moment the event reached the subscription (first: 0). */
  readonly ladder: ReadonlyArray<Duration.Duration>
  /** Each attempt's whole exchange. */
  readonly timeout: Duration.Duration
  /** How long the secret before a rotation keeps signing. */
  readonly rotationGrace: Duration.Duration
}

export const defaultWebhookSettings: WebhookSettingsShape = {
  enabled: true,
  pollInterval: Duration.seconds(1),
  lease: defaultLease,
  batchSize: 200,
  concurrency: 64,
  perSubscription: 32,
  settleInterval: Duration.millis(5),
  run: 100,
  ladder: [
    Duration.zero,
    Duration.seconds(5),
    Duration.minutes(5),
    Duration.minutes(30),
    Duration.hours(2),
    Duration.hours(5),
    Duration.hours(10),
    Duration.hours(24)
  ],
  timeout: Duration.seconds(15),
  rotationGrace: Duration.hours(24)
}

/** The delivery settings; provide another value (a short ladder in tests) over `CoreServicesLayer`. */
export const WebhookSettings = Context.Reference<WebhookSettingsShape>("svc/WebhookSettings", {
  defaultValue: () => defaultWebhookSettings
})

/** The `provider` of each event (api-endpoints.md, Events). */
const providerOf = (topic: string, data: Readonly<Record<string, unknown>>): string => {
  switch (topic) {
    case "order.status.changed":
      return "commerce"
    case "channel.health.updated":
      return "email"
    case "message.received":
      return typeof data["channel"] === "string" ? data["channel"] : "svc"
    default:
      return "svc"
  }
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The body one subscription receives for one outbox row, or None when it must not receive it:
 * the event type is not among its types; an `outcome.recorded` of a profile on the connect-broker
 * tier; an `outcome.recorded` of a healthcare-family profile to anyone but the provisioning app.
 * The contact of `outcome.recorded` only when the subscription's credential opens it.
 */
export const bodyFor = (row: UnpublishedRow, subscription: FanOutSubscription): Option.Option<{ readonly id: string; readonly body: string }> => {
  if (!subscription.event_types.includes(row.topic)) return Option.none()
  const payload = isRecord(row.payload) ? row.payload : {}
  const delivery = isRecord(payload["delivery"]) ? payload["delivery"] : {}
  const data = isRecord(payload["data"]) ? payload["data"] : {}
  // The connect-broker tier gets no outcomes, as its replay reads empty (decision 0026).
  if (row.topic === "outcome.recorded" && !subscription.attribution_enabled) return Option.none()
  if (row.topic === "outcome.recorded" && delivery["healthcare_family"] === true) {
    const app = delivery["provisioned_by_app_id"]
    if (subscription.oauth_app_id === null || subscription.oauth_app_id !== app) return Option.none()
  }
  const id = typeof payload["id"] === "string" ? payload["id"] : row.id
  const withContact = row.topic === "outcome.recorded" && subscription.contact_allowed
    ? {
      ...data,
      contact: row.customer_live
        ? { customer_key: data["customer_key"] ?? null, first_name: row.first_name, last_name: row.last_name, email: row.email, phone: row.phone }
        : null
    }
    : data
  const event = {
    id,
    type: row.topic,
    provider: providerOf(row.topic, data),
    created_at: typeof payload["created_at"] === "string" ? payload["created_at"] : row.created_at,
    data: withContact
  }
  return Option.some({ id, body: JSON.stringify(event) })
}

/** Seconds until the attempt after attempt number `attempts`, or None when the ladder is spent. */
export const nextDelaySeconds = (
  ladder: ReadonlyArray<Duration.Duration>,
  attempts: number,
  ageSeconds: number,
  retryAfterSeconds: number | undefined,
  random: () => number = Math.random
): Option.Option<number> => {
  const next = ladder[attempts]
  if (next === undefined) return Option.none()
  const previous = ladder[attempts - 1] ?? Duration.zero
  const step = Duration.toSeconds(next) - Duration.toSeconds(previous)
  // Jitter of up to a tenth of the step either way spreads the retries of one outage.
  const jitter = (random() * 2 - 1) * step * 0.1
  const due = Math.max(0, Duration.toSeconds(next) + jitter - ageSeconds)
  return Option.some(Math.max(due, retryAfterSeconds ?? 0))
}

const header = (value: string | ReadonlyArray<string> | undefined): string | undefined => typeof value === "string" ? value : value?.[0]

/** `Retry-After` as seconds (a number of seconds or an HTTP date). */
export const retryAfterSeconds = (header: string | undefined, now = Date.now()): number | undefined => {
  if (header === undefined) return undefined
  if (/^\d+$/.test(header.trim())) return Number(header.trim())
  const at = Date.parse(header)
  return Number.isNaN(at) ? undefined : Math.max(0, (at - now) / 1000)
}

const render = (row: DeliveryRow): WebhookDelivery => ({
  id: row.id,
  subscription_id: row.subscription_id,
  event_id: row.event_id,
  event_type: row.event_type,
  status: row.status,
  attempts: row.attempts,
  next_attempt_at: row.next_attempt_at,
  last_attempt_at: row.last_attempt_at,
  last_status_code: row.last_status_code,
  last_error: row.last_error,
  redelivery_of: row.redelivery_of,
  created_at: row.created_at,
  completed_at: row.completed_at
})

const renderAttempt = (row: AttemptRow): WebhookDeliveryAttempt => ({
  delivery_id: row.delivery_id,
  attempt: row.attempt,
  attempted_at: row.attempted_at,
  status_code: row.status_code,
  duration_ms: row.duration_ms,
  error: row.error
})

/** How long a host's resolved addresses are reused by the delivery worker (each attempt still classifies them). */
const HOST_CACHE_SECONDS = 5

interface Signer {
  readonly id: string
  readonly url: string
  /** The current secret as stored: a batch goes on only while the subscription still has it (and the URL). */
  readonly sealed: string
  readonly status: SubscriptionRow["status"]
  readonly secrets: ReadonlyArray<string>
}

/** Every sealed secret opened, or undefined when one does not open (sealed under another key). */
const openAll = (box: { readonly open: (sealed: string) => string }, sealed: ReadonlyArray<string>): ReadonlyArray<string> | undefined => {
  try {
    return sealed.map((one) => box.open(one))
  } catch {
    return undefined
  }
}

export type AttemptOutcome = "succeeded" | "retry" | "failed" | "lease_lost"

/** One attempt's end, and the next row of its batch when the attempt went on with it (leased to it). */
interface Step {
  readonly outcome: AttemptOutcome
  readonly next: Option.Option<DeliveryRow>
}

// An attempt's call site is always the same line; capturing it took 4 % of the worker's CPU.
const noStackTrace = { captureStackTrace: false } as const

const stop = (outcome: AttemptOutcome): Step => ({ outcome, next: Option.none() })

/** A result as written: false when the lease was lost; the batch's next row when the attempt goes on. */
interface Written {
  readonly written: boolean
  readonly next: Option.Option<DeliveryRow>
}

export interface ClaimedAttempt {
  readonly subscriptionId: string
  readonly run: Effect.Effect<AttemptOutcome, DatabaseUnavailable>
}

export class WebhookDeliveries extends Context.Service<WebhookDeliveries, {
  readonly list: (profile: ProfileContext, query: WebhookDeliveriesQuery) => Effect.Effect<
    { readonly data: ReadonlyArray<WebhookDelivery>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } },
    DatabaseUnavailable | InvalidParameter
  >
  readonly redeliver: (profile: ProfileContext, id: string) => Effect.Effect<WebhookDelivery, DatabaseUnavailable | NotFound>
  /** Every attempt of the delivery's event to its subscription (redeliveries included), oldest first. */
  readonly attempts: (profile: ProfileContext, id: string, query: WebhookDeliveryAttemptsQuery) => Effect.Effect<
    { readonly data: ReadonlyArray<WebhookDeliveryAttempt>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } },
    DatabaseUnavailable | NotFound | InvalidParameter
  >
  /** One fan-out batch; answers how many outbox rows it published. */
  readonly fanOutOnce: Effect.Effect<number, DatabaseUnavailable>
  /**
   * Claims up to `limit` due deliveries, per subscription no more than `perSubscription` less what
   * `busy` has under way; answers one attempt to run per claimed row (each settles its own result).
   */
  readonly claimDue: (limit: number, busy: ReadonlyArray<Busy>) => Effect.Effect<ReadonlyArray<ClaimedAttempt>, DatabaseUnavailable>
  /**
   * The heartbeat: renews, in one statement, the lease of every row this process claimed and has not
   * begun to record; an attempt whose row another runner took over is stopped (nothing sent or written after).
   */
  readonly renewHeld: Effect.Effect<void, DatabaseUnavailable>
}>()("svc/WebhookDeliveries") {
  static readonly layer = Layer.effect(WebhookDeliveries)(
    Effect.gen(function*() {
      const settings = yield* WebhookSettings
      const config = yield* AppConfig
      const box = yield* SecretBox
      const outbox = yield* OutboxRepo
      const subscriptions = yield* WebhookSubscriptionsRepo
      const deliveries = yield* WebhookDeliveriesRepo
      const allow = parseAllowList(config.webhookAllowHosts ?? [])
      const dnsServers = config.dnsServers ?? []
      const leaseSeconds = Duration.toSeconds(settings.lease)
      // Plain http passes the rule only through the development allow-list (decision 0077): a
      // process without one leaves those rows to one that has it (tests share one database).
      const plainHttp = allow.hosts.length > 0 || allow.cidrs.length > 0

      const list = Effect.fn("Webhooks.listDeliveries")(function*(profile: ProfileContext, query: WebhookDeliveriesQuery) {
        const limit = query.limit ?? 50
        const after = Option.map(
          yield* parseCursor(query.cursor, (keyset) => !Number.isNaN(Date.parse(keyset.createdAt)) && isUuid(keyset.id)),
          (keyset) => ({ at: keyset.createdAt, id: keyset.id })
        )
        const rows = yield* deliveries.list({
          profileId: profile.profileId,
          subscriptionId: query.subscription_id?.toLowerCase(),
          status: query.status,
          after,
          limit
        })
        return toPage(rows, limit, render)
      })

      const notFound = () => new NotFound({ message: "No such webhook delivery" })

      const redeliver = Effect.fn("Webhooks.redeliver")(function*(profile: ProfileContext, id: string) {
        if (!isUuid(id)) return yield* notFound()
        const found = yield* deliveries.find(profile.profileId, id.toLowerCase())
        if (Option.isNone(found)) return yield* notFound()
        const subscription = yield* subscriptions.byId(found.value.subscription_id)
        if (Option.isNone(subscription)) return yield* notFound()
        return render(yield* deliveries.redeliver(found.value, crypto.randomUUID()))
      })

      const attempts = Effect.fn("Webhooks.deliveryAttempts")(function*(profile: ProfileContext, id: string, query: WebhookDeliveryAttemptsQuery) {
        const limit = query.limit ?? 50
        // The keyset is the attempt's place in the log (its sequence number).
        const afterId = Option.getOrNull(Option.map(
          yield* parseCursor(query.cursor, (keyset) => /^[0-9]{1,19}$/.test(keyset.id)),
          (keyset) => keyset.id
        ))
        if (!isUuid(id)) return yield* notFound()
        const found = yield* deliveries.find(profile.profileId, id.toLowerCase())
        if (Option.isNone(found)) return yield* notFound()
        const rows = yield* deliveries.attempts(found.value, afterId, limit)
        const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: row.attempted_at, id: row.id }))
        return { data: page.map(renderAttempt), pagination }
      })

      const fanOutOnce = Effect.withSpan("Webhooks.fanOut")(deliveries.transaction(Effect.gen(function*() {
        const rows = yield* outbox.claimUnpublished(settings.batchSize)
        if (rows.length === 0) return 0
        const subs = yield* subscriptions.forFanOut([...new Set(rows.map((row) => row.profile_id))])
        // One delivery batch per producer batch (rows written before batches were kept: one for all of them).
        const batches = new Map<string, string>()
        const heads = new Set<string>()
        const fresh: Array<NewDelivery> = []
        rows.forEach((row, seq) => {
          const key = row.batch ?? ""
          const batchId = batches.get(key) ?? crypto.randomUUID()
          batches.set(key, batchId)
          for (const subscription of subs) {
            if (subscription.profile_id !== row.profile_id) continue
            const body = bodyFor(row, subscription)
            if (Option.isNone(body)) continue
            // Rows come in outbox order: a (subscription, batch)'s first one is its head.
            const head = `${subscription.id}|${batchId}`
            const ready = !heads.has(head)
            heads.add(head)
            fresh.push({
              ready,
              id: crypto.randomUUID(),
              subscriptionId: subscription.id,
              profileId: row.profile_id,
              outboxId: row.id,
              eventId: body.value.id,
              eventType: row.topic,
              body: body.value.body,
              batchId,
              seq,
              traceparent: row.traceparent,
              tracestate: row.tracestate
            })
          }
        })
        yield* deliveries.insert(fresh)
        yield* outbox.markPublished(rows.map((row) => row.id))
        return rows.length
      })))

      // The public-host check's look-ups, shared by every attempt of this process for a few seconds.
      const resolved = resolveCache(HOST_CACHE_SECONDS)

      // Results that ended and wait to be written: the first one in waits `settleInterval`, then
      // writes all that came meanwhile in one statement. Each attempt waits for its own write, so
      // its slot (and its row's lease) is held until the result is kept.
      let waiting: Array<{ readonly settlement: Settlement; readonly written: Deferred.Deferred<Written, DatabaseUnavailable> }> = []
      const flush = Effect.gen(function*() {
        yield* Effect.sleep(settings.settleInterval)
        const batch = waiting
        waiting = []
        const exit = yield* Effect.exit(deliveries.settle(batch.map((entry) => entry.settlement), leaseSeconds))
        for (const { settlement, written } of batch) {
          yield* Deferred.done(written, Exit.map(exit, (settled: Settled) => ({
            written: settled.written.has(settlement.id),
            next: Option.fromNullishOr(settled.next.get(settlement.id))
          })))
        }
      }).pipe(Effect.uninterruptible)
      // Rows claimed here whose result is not being written yet: the heartbeat renews their leases
      // (decision 0119), and stops an attempt whose row another runner took over.
      const held = new Map<string, { readonly token: string; readonly lost: Deferred.Deferred<void> }>()
      const letGo = (id: string, token: string) =>
        Effect.sync(() => {
          if (held.get(id)?.token === token) held.delete(id)
        })
      const renewHeld = Effect.gen(function*() {
        if (held.size === 0) return
        const rows = [...held].map(([id, { token }]) => ({ id, token }))
        const renewed = yield* deliveries.renew(rows, leaseSeconds)
        for (const { id, token } of rows) {
          const entry = held.get(id)
          if (renewed.has(id) || entry === undefined || entry.token !== token) continue
          held.delete(id)
          yield* Deferred.succeed(entry.lost, undefined)
        }
      })

      /**
       * Records the attempt's result under its lease; `written` false: the lease was lost, nothing
       * written. With `goOn` (a success whose attempt may go on), the next row of the batch, leased.
       */
      const settle = (
        row: DeliveryRow,
        token: string,
        outcome: Settlement["outcome"],
        delaySeconds: number,
        record: AttemptRecord,
        goOn: Settlement["goOn"] = null
      ) =>
        Effect.gen(function*() {
          // From here the result is being kept: not stopped by a renewal racing the write that ends the lease.
          yield* letGo(row.id, token)
          const written = yield* Deferred.make<Written, DatabaseUnavailable>()
          const first = waiting.length === 0
          waiting.push({ settlement: { id: row.id, token, outcome, delaySeconds, attempt: record, goOn }, written })
          if (first) yield* flush
          return yield* Deferred.await(written)
        })
      const ended = (outcome: AttemptOutcome) => (result: Written): Step =>
        result.written ? { outcome, next: result.next } : stop("lease_lost")

      /**
       * One attempt of a claimed row (its subscription read with the round's others). `goOn`: on
       * success, lease the batch's next row to this attempt's caller.
       */
      const attempt = (row: DeliveryRow, token: string, subscription: Option.Option<Signer>, goOn: boolean): Effect.Effect<Step, DatabaseUnavailable> =>
        Effect.gen(function*() {
          if (Option.isNone(subscription)) {
            return ended("failed")(yield* settle(row, token, "failed", 0, { statusCode: null, error: "subscription_deleted", durationMs: null }))
          }
          const sub = subscription.value
          // Left behind by a 410 (or a fan-out racing it): released, never sent.
          if (sub.status === "disabled") {
            return ended("failed")(yield* settle(row, token, "failed", 0, { statusCode: null, error: "subscription_disabled", durationMs: null }))
          }
          // The one outbound client under the public-host rule: the URL's host resolved and checked,
          // the request sent to the checked address, a redirect not followed, the answer's body dropped.
          const [took, result] = yield* send({
            method: "POST",
            url: sub.url,
            headers: {
              "content-type": "application/json",
              "user-agent": "svc-webhooks/1",
              ...signedHeaders(sub.secrets, row.event_id, Math.floor(Date.now() / 1000), row.body)
            },
            body: row.body,
            timeout: settings.timeout,
            publicOnly: { allow, dnsServers, cache: resolved },
            keepBody: false
          }).pipe(
            Effect.map((answer) => ({ ok: true as const, answer })),
            Effect.catch((error) => Effect.succeed({ ok: false as const, error: error.message })),
            Effect.timed
          )
          const durationMs = Duration.toMillis(took)
          const record = result.ok
            ? { statusCode: result.answer.status, error: result.answer.status >= 300 && result.answer.status < 400 ? "redirect_not_followed" : null, durationMs }
            : { statusCode: null, error: result.error, durationMs }
          // Written with the results that end within `settleInterval`; the slot and the lease are held
          // until then, so a crash repeats only what was in flight (decision 0095, issue 34).
          if (result.ok && result.answer.status >= 200 && result.answer.status < 300) {
            const next = goOn && sub.status === "active" ? { url: sub.url, secretSealed: sub.sealed } : null
            return ended("succeeded")(yield* settle(row, token, "succeeded", 0, record, next))
          }
          if (result.ok && result.answer.status === 410) {
            // Disabled before the result hands the batch on: a claim in between then finds the next
            // row's subscription disabled and releases it unsent, instead of posting to a gone endpoint.
            yield* subscriptions.disable(sub.id, "endpoint_gone")
            const failed = yield* settle(row, token, "failed", 0, { ...record, error: "endpoint_gone" })
            // What waits behind it would otherwise stay pending until someone turns it on again.
            yield* deliveries.failPending(sub.id, "subscription_disabled")
            return stop(failed.written ? "failed" : "lease_lost")
          }
          const delay = nextDelaySeconds(
            settings.ladder,
            row.attempts,
            row.age_seconds,
            result.ok ? retryAfterSeconds(header(result.answer.headers["retry-after"])) : undefined
          )
          if (Option.isNone(delay)) return ended("failed")(yield* settle(row, token, "failed", 0, record))
          return ended("retry")(yield* settle(row, token, null, delay.value, record))
        }).pipe(
          Effect.withSpan("Webhooks.attempt", { attributes: { "webhook.event_type": row.event_type } }, noStackTrace),
          // A root span linked to the request that queued the event (decision 0083), traced even
          // though the polling loop around it is not.
          withLinkedJobSpan("webhook_deliveries", row, {
            "messaging.message.id": row.id,
            "svc.profile_id": row.profile_id,
            "svc.webhook.event_id": row.event_id
          }),
          Effect.withTracerEnabled(true)
        )

      /** The subscription's secret does not open here: no request, the next step of the ladder. */
      const unreadable = (row: DeliveryRow, token: string) =>
        Effect.gen(function*() {
          const record = { statusCode: null, error: "signing_secret_unreadable", durationMs: null }
          const delay = nextDelaySeconds(settings.ladder, row.attempts, row.age_seconds, undefined)
          if (Option.isNone(delay)) return ended("failed")(yield* settle(row, token, "failed", 0, record))
          return ended("retry")(yield* settle(row, token, null, delay.value, record))
        })

      const claimDue = (limit: number, busy: ReadonlyArray<Busy>) =>
        Effect.gen(function*() {
          const token = crypto.randomUUID()
          // One claim and one subscription read for up to `limit` rows, instead of a read per delivery.
          const claimed = yield* deliveries.claim(limit, Math.max(1, settings.perSubscription), busy, leaseSeconds, token, plainHttp)
          if (claimed.length === 0) return []
          const subs = yield* subscriptions.byIds([...new Set(claimed.map((row) => row.subscription_id))])
          const live = new Map(subs.map((sub) => [sub.id, sub] as const))
          const runLength = Math.max(1, settings.run)
          return yield* Effect.forEach(claimed, (head) =>
            Effect.gen(function*() {
              const sub = live.get(head.subscription_id)
              const signer = sub === undefined ? undefined : signerOf(sub)
              // Held from the claim: the heartbeat renews the head's lease while it waits for its turn.
              const lostHead = yield* Deferred.make<void>()
              held.set(head.id, { token, lost: lostHead })
              const once = (row: DeliveryRow, lost: Deferred.Deferred<void>, goOn: boolean) => {
                const run: Effect.Effect<Step, DatabaseUnavailable> = signer === undefined
                  ? attempt(row, token, Option.none(), false)
                  : Option.isSome(signer)
                  ? attempt(row, token, signer, goOn)
                  : unreadable(row, token)
                // Whichever ends first: the attempt, or the heartbeat finding the row another runner's.
                return Effect.raceFirst(run, Effect.as(Deferred.await(lost), stop("lease_lost"))).pipe(
                  Effect.ensuring(letGo(row.id, token))
                )
              }
              // The head, then the rows its batch hands on to this attempt, one after another (order
              // within the batch), up to `run` of them.
              const run = Effect.gen(function*() {
                let step = yield* once(head, lostHead, runLength > 1)
                for (let sent = 1; Option.isSome(step.next); sent++) {
                  const row = step.next.value
                  const lost = yield* Deferred.make<void>()
                  held.set(row.id, { token, lost })
                  step = yield* once(row, lost, sent + 1 < runLength)
                }
                return step.outcome
              })
              return { subscriptionId: head.subscription_id, run } satisfies ClaimedAttempt
            }))
        })

      /**
       * What an attempt needs of its subscription, the secrets opened once per claim; None when a
       * secret does not open (sealed under another key): that row waits on the ladder, the others go on.
       */
      const signerOf = (sub: SubscriptionRow): Option.Option<Signer> => {
        const sealed = [
          sub.secret_sealed,
          ...(sub.previous_secret_sealed !== null && sub.previous_secret_expires_at !== null ? [sub.previous_secret_sealed] : []),
          ...(sub.older_secret_sealed !== null ? [sub.older_secret_sealed] : [])
        ]
        const secrets = openAll(box, sealed)
        return secrets === undefined ? Option.none() : Option.some({ id: sub.id, url: sub.url, sealed: sub.secret_sealed, status: sub.status, secrets })
      }

      return { list, redeliver, attempts, fanOutOnce, claimDue, renewHeld }
    })
  ).pipe(Layer.provide([OutboxRepo.layer, WebhookSubscriptionsRepo.layer, WebhookDeliveriesRepo.layer]))
}

/**
 * The background worker (started by `CoreServicesLayer`, like the sync worker): one loop fans the
 * outbox out; a dispatcher keeps up to `concurrency` attempts running, claiming as many rows as
 * slots are free, at most `perSubscription` per subscription. Each attempt runs on its own: a
 * slow endpoint (up to the timeout) holds its own slots, never the other subscriptions'
 * deliveries (decision 0095). With slots free and nothing claimable, the dispatcher waits for the
 * poll interval or for what can make a row claimable here: a result written (the next row of
 * its batch becomes the head, a subscription's share frees up) or a fan-out.
 */
export const WebhookWorkerLayer = Layer.effectDiscard(Effect.gen(function*() {
  const settings = yield* WebhookSettings
  if (!settings.enabled) return
  const webhooks = yield* WebhookDeliveries
  const concurrency = Math.max(1, settings.concurrency)
  const logged = <A, E, R>(what: string, fallback: A, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    effect.pipe(Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.as(Effect.logWarning(`webhook worker: ${what} failed; retrying after the poll interval`, cause), fallback)
    ))
  // One pending signal is enough: the dispatcher claims again, and sees all that happened.
  const wake = yield* Queue.sliding<true>(1)

  const fanOut = Effect.gen(function*() {
    // The first poll waits one interval: start-up work (migrations, the runner) goes first.
    yield* Effect.sleep(settings.pollInterval)
    while (true) {
      const published = yield* logged("a fan-out", 0, Effect.withTracerEnabled(webhooks.fanOutOnce, false))
      if (published > 0) yield* Queue.offer(wake, true)
      yield* published > 0 ? Effect.yieldNow : Effect.sleep(settings.pollInterval)
    }
  })

  const dispatch = Effect.gen(function*() {
    // Free slots as tokens: an attempt takes one and gives it back when it ends, however it ends.
    const slots = yield* Queue.bounded<true>(concurrency)
    yield* Queue.offerAll(slots, Array.from({ length: concurrency }, () => true as const))
    // Attempts under way per subscription: the claim leaves each its share of `perSubscription`.
    const inFlight = new Map<string, number>()
    const release = (subscriptionId: string) =>
      Effect.sync(() => {
        const left = (inFlight.get(subscriptionId) ?? 1) - 1
        if (left > 0) inFlight.set(subscriptionId, left)
        else inFlight.delete(subscriptionId)
      }).pipe(Effect.andThen(Queue.offer(slots, true)), Effect.andThen(Queue.offer(wake, true)))
    yield* Effect.sleep(settings.pollInterval)
    while (true) {
      const first = yield* Queue.takeBetween(slots, 1, concurrency)
      // Under load slots free one by one: a moment's wait gathers a few, one claim for them.
      const free = first.length * 4 >= concurrency
        ? first
        : [...first, ...(yield* Effect.andThen(Effect.sleep(Duration.millis(5)), Queue.takeBetween(slots, 0, concurrency - first.length)))]
      const busy = [...inFlight].map(([subscriptionId, n]) => ({ subscriptionId, inFlight: n }))
      const none: ReadonlyArray<ClaimedAttempt> = []
      const attempts = yield* logged("a claim", none, Effect.withTracerEnabled(webhooks.claimDue(free.length, busy), false))
      yield* Queue.offerAll(slots, free.slice(attempts.length))
      for (const attempt of attempts) {
        inFlight.set(attempt.subscriptionId, (inFlight.get(attempt.subscriptionId) ?? 0) + 1)
        const settled: AttemptOutcome = "lease_lost"
        yield* Effect.forkChild(
          logged("an attempt", settled, Effect.withTracerEnabled(attempt.run, false)).pipe(Effect.ensuring(release(attempt.subscriptionId)))
        )
      }
      // Nothing claimable: wait for a result, a fan-out or the interval (rows coming due, other processes).
      if (attempts.length === 0) yield* Effect.raceFirst(Queue.take(wake), Effect.sleep(settings.pollInterval))
    }
  })
  // Scoped to the layer: the fibers end with the process; their leases expire and another runner takes the rows over.
  yield* Effect.forkScoped(heartbeat(settings.lease, Effect.withTracerEnabled(webhooks.renewHeld, false)))
  yield* Effect.forkScoped(fanOut)
  yield* Effect.forkScoped(dispatch)
})).pipe(Layer.provide(WebhookDeliveries.layer))
