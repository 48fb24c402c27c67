/**
 * Webhook delivery (decision 0078): the outbox fanned out to durable delivery rows in order,
 * and the worker that signs and posts them on the 24-hour ladder.
 *
 * - Fan-out: up to `batchSize` (200) unpublished outbox rows, oldest first, are claimed (SKIP
 *   LOCKED), one delivery row per matching subscription is written with the batch's id and the
 *   row's position, and the rows get `published_at`, all in one transaction: a crash leaves
 *   either all of it or none.
 * - First attempts from the fan-out (decision 0157): instead, the claimed rows are leased to a
 *   window (renewed while it runs) and their deliveries sent at once, each (subscription, batch) in
 *   order; each row is written once, with its result, as its attempt ends (a statement every 20
 *   ms), and the outbox rows are published when the window ends. A crash repeats only what was in
 *   flight; the next fan-out takes the rows again and writes only the deliveries not written.
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
 *   a crash repeats only requests that were in flight. The heartbeat's renewal takes its turn with
 *   those writes (one statement at a time on this process's rows: side by side they deadlocked).
 * - The ladder: attempts at about 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 24 h after the first
 *   attempt (a pause does not use the ladder up), jittered; a `Retry-After` pushes the next attempt later, never
 *   sooner. 2xx succeeds; 410 fails the row and disables the subscription; anything else
 *   (including a redirect, a refused target, a timeout) waits for the next step, and after the
 *   last one the row fails.
 * - The attempt log (decision 0112): each recorded result appends the attempt (time, status code,
 *   duration, error) in the same statement; the log of an event to a subscription includes its
 *   redeliveries.
 */
import { Cause, Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Queue, Semaphore } from "effect"
import { type DatabaseUnavailable, type InvalidParameter, NotFound } from "../../../schema/errors.ts"
import type { WebhookDeliveriesQuery, WebhookDelivery, WebhookDeliveryAttempt, WebhookDeliveryAttemptsQuery } from "../../../schema/webhooks.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { OutboxRepo, type UnpublishedRow } from "../../kernel/outbox/repo.ts"
import { AppConfig } from "../../platform/config.ts"
import { pageOf, parseCursor, toPage } from "../../platform/pagination.ts"
import { SecretBox } from "../../platform/secret-box.ts"
import { isUuid } from "../../../schema/common.ts"
import { type FanOutSubscription, type SubscriptionRow, WebhookSubscriptionsRepo } from "../subscriptions/repo.ts"
import { type Destination, sendTo } from "../../platform/outbound-http.ts"
import { checkTarget, parseAllowList, resolveCache, type TargetRefused } from "../../platform/public-host.ts"
import {
  type AttemptRecord,
  type AttemptRow,
  type Busy,
  type DeliveryRow,
  MAX_LEASE_AHEAD,
  MAX_RESPONSE_BODY_LENGTH,
  type NewDelivery,
  type Settlement,
  WebhookDeliveriesRepo
} from "./repo.ts"
import { signedHeaders } from "./signing.ts"
import { spansRecorded, withLinkedJobSpan } from "../../platform/tracing.ts"
import { defaultLease, heartbeat, leaseSecondsOf, leaseTrusted } from "../../platform/lease.ts"

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
  /**
   * How long a fan-out sends the first attempts of what it fans out itself (decision 0157): each row
   * is written once, with its result, as its attempt ends; one still under way when the window
   * closes is written leased to it, and the rest waiting, for the worker to claim. Zero: the fan-out
   * only writes the rows, and the worker claims them.
   */
  readonly firstAttempts: Duration.Duration
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
  firstAttempts: Duration.seconds(30),
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
 * Whether one subscription receives one outbox row: not when the event type is not among its
 * types; an `outcome.recorded` of a profile on the connect-broker tier; an `outcome.recorded` of a
 * healthcare-family profile to anyone but the provisioning app.
 */
const receives = (row: UnpublishedRow, subscription: FanOutSubscription): boolean => {
  if (!subscription.event_types.includes(row.topic)) return false
  // The connect-broker tier gets no outcomes, as its replay reads empty (decision 0026).
  if (row.topic === "outcome.recorded" && !subscription.attribution_enabled) return false
  const payload = isRecord(row.payload) ? row.payload : {}
  const delivery = isRecord(payload["delivery"]) ? payload["delivery"] : {}
  if (row.topic === "outcome.recorded" && delivery["healthcare_family"] === true) {
    const app = delivery["provisioned_by_app_id"]
    if (subscription.oauth_app_id === null || subscription.oauth_app_id !== app) return false
  }
  return true
}

/**
 * Whether the subscription's body of the row carries the contact (of `outcome.recorded`, when the
 * subscription's credential opens it): the one way two subscriptions' bodies of a row differ.
 */
const withContact = (row: UnpublishedRow, subscription: FanOutSubscription): boolean =>
  row.topic === "outcome.recorded" && subscription.contact_allowed

/** The row's event as sent, with or without its contact. */
const eventBody = (row: UnpublishedRow, contact: boolean): { readonly id: string; readonly body: string } => {
  const payload = isRecord(row.payload) ? row.payload : {}
  const data = isRecord(payload["data"]) ? payload["data"] : {}
  const id = typeof payload["id"] === "string" ? payload["id"] : row.id
  const shown = contact
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
    data: shown
  }
  return { id, body: JSON.stringify(event) }
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
  error: row.error,
  response_body: row.response_body
})

/** Bytes of an answer's body read for the attempt log: enough for its character limit in any UTF-8. */
const RESPONSE_BODY_BYTES = MAX_RESPONSE_BODY_LENGTH * 4

/**
 * The attempt log's text of an answer's body: UTF-8 (a sequence cut by the byte limit or invalid
 * becomes U+FFFD, NUL is dropped since a text column refuses it), at most
 * MAX_RESPONSE_BODY_LENGTH characters; null when empty.
 */
export const responseBodyText = (body: Uint8Array): string | null => {
  if (body.length === 0) return null
  const text = [...new TextDecoder("utf-8").decode(body).replaceAll("\u0000", "")].slice(0, MAX_RESPONSE_BODY_LENGTH).join("")
  return text === "" ? null : text
}

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

// An attempt's call site is always the same line; capturing it took 4 % of the worker's CPU.
const noStackTrace = { captureStackTrace: false } as const

/**
 * Windows of first attempts a process runs at once, and the deliveries they may hold together
 * (decision 0157): a fan-out past either writes its rows for the worker, and a claimed row costs
 * three writes where a window's costs one. Four windows sent most of a backlog of ten fan-outs that
 * way (bench/README). A window's delivery holds a couple of hundred bytes (its body shared).
 */
const FIRST_ATTEMPT_WINDOWS = 16
const WINDOW_DELIVERIES = 200_000

/** How often a fan-out writes the rows whose first attempt ended meanwhile (decision 0157). */
const FLUSH_INTERVAL = Duration.millis(20)

/** Rows a run leases ahead at a time (the look-ahead starts again when half are sent). */
const WINDOW = MAX_LEASE_AHEAD

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
  /** One fan-out batch; answers how many outbox rows it took (published, or leased to a window of first attempts). */
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

      // The public-host check's look-ups, shared by every attempt of this process for a few seconds.
      const resolved = resolveCache(HOST_CACHE_SECONDS)

      // The writer (issue 34): results and leases to give back wait here; the first one in wakes it,
      // it waits `settleInterval` and writes all that came meanwhile in one statement. One write at a
      // time: a run's rows are recorded in the order they were sent, so the last one recorded of a
      // batch is the one that hands it on. A run does not wait for a write before sending its next
      // row (it holds that row's lease already); it waits for its last write before it ends, so its
      // slot (and its rows' leases) are held until its results are kept.
      let results: Array<{ readonly settlement: Settlement; readonly lost: Deferred.Deferred<void> }> = []
      let releases: Array<{ readonly id: string; readonly token: string }> = []
      let written = Deferred.makeUnsafe<void, DatabaseUnavailable>()
      const wake = yield* Queue.sliding<true>(1)
      // One statement at a time on the rows this process holds: the results' record and the
      // heartbeat's renewal lock the same rows (a row just sent, the next one of its batch) in
      // different orders, and run side by side they deadlocked. A renewal that skips locked rows
      // instead does not work either: the record finds each row's tuple before it updates it, a
      // renewal in between moves the tuple, and the result is dropped as if the row were lost
      // (bench/README).
      const oneWriter = yield* Semaphore.make(1)
      const write = Effect.gen(function*() {
        const these = results
        const freed = releases
        const done = written
        results = []
        releases = []
        written = Deferred.makeUnsafe()
        const exit = yield* Effect.exit(Effect.zipWith(
          deliveries.settle(these.map((entry) => entry.settlement)),
          deliveries.release(freed),
          (kept) => kept
        ))
        // A result not written: its row is another runner's now, and so is the rest of its run.
        if (Exit.isSuccess(exit)) {
          for (const entry of these) if (!exit.value.has(entry.settlement.id)) yield* Deferred.succeed(entry.lost, undefined)
        }
        yield* Deferred.done(done, Exit.asVoid(exit))
      }).pipe(oneWriter.withPermits(1), Effect.uninterruptible)
      // Waiting is interruptible (the layer's end); a write once begun is finished.
      yield* Effect.forkScoped(Effect.forever(Effect.andThen(Queue.take(wake), Effect.andThen(Effect.sleep(settings.settleInterval), write))))
      /** Queues a result (or leases to give back); answers the write that will keep it. */
      const enqueue = (
        entry: { readonly settlement: Settlement; readonly lost: Deferred.Deferred<void> } | undefined,
        free: ReadonlyArray<{ readonly id: string; readonly token: string }> = []
      ) =>
        Effect.suspend(() => {
          if (entry !== undefined) results.push(entry)
          releases.push(...free)
          return Effect.as(Queue.offer(wake, true), written)
        })

      // Rows claimed or leased here whose result is not queued yet: the heartbeat renews their leases
      // (decision 0119), and stops the run of a row another runner took over. `since`: when the
      // statement that last leased or renewed the row was sent (this process's monotonic clock).
      const held = new Map<string, { readonly token: string; readonly lost: Deferred.Deferred<void>; readonly since: number }>()
      const renewHeld = oneWriter.withPermits(1)(Effect.gen(function*() {
        if (held.size === 0) return
        const rows = [...held].map(([id, { token }]) => ({ id, token }))
        const sent = performance.now()
        const renewed = yield* deliveries.renew(rows, leaseSeconds)
        for (const { id, token } of rows) {
          const entry = held.get(id)
          if (entry === undefined || entry.token !== token) continue
          if (renewed.has(id)) {
            held.set(id, { ...entry, since: sent })
            continue
          }
          held.delete(id)
          yield* Deferred.succeed(entry.lost, undefined)
        }
      }))
      // A row is sent only while its lease is known to hold (`leaseTrusted`).
      const trusted = (id: string, token: string) => {
        const entry = held.get(id)
        return entry === undefined || entry.token !== token || leaseTrusted(settings.lease, entry.since)
      }
      const letGo = (id: string, token: string) => {
        if (held.get(id)?.token === token) held.delete(id)
      }

      /** What one attempt ended with: the result to record, and whether the run goes on after it. */
      interface Ended {
        readonly outcome: AttemptOutcome
        readonly outcomeColumn: Settlement["outcome"]
        readonly delaySeconds: number
        readonly record: AttemptRecord
      }
      const ending = (outcome: AttemptOutcome, outcomeColumn: Settlement["outcome"], record: AttemptRecord, delaySeconds = 0): Ended =>
        ({ outcome, outcomeColumn, delaySeconds, record })
      /** The next step of the ladder after this attempt (number `row.attempts` + 1), or failed when it is spent. */
      const onLadder = (row: DeliveryRow, record: AttemptRecord, retryAfter: number | undefined): Ended =>
        Option.match(nextDelaySeconds(settings.ladder, row.attempts + 1, row.age_seconds, retryAfter), {
          onNone: () => ending("failed", "failed", record),
          onSome: (delay) => ending("retry", null, record, delay)
        })

      // Without an exporter an attempt opens no spans: its two placeholders cost a quarter of the
      // worker's deliveries a second (bench/README) and showed nothing.
      const recording = yield* spansRecorded
      const traced = (row: DeliveryRow, effect: Effect.Effect<Ended>) =>
        effect.pipe(
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

      /**
       * One attempt of a leased row: signed and sent to the subscription (its secrets opened at the
       * claim) at `target`, the address its URL resolved to and the public-host rule checked, once
       * per run: every request of a run goes to the address checked (a redirect not followed, the
       * answer's body dropped).
       */
      const attempt = (row: DeliveryRow, sub: Signer, target: Effect.Effect<Destination, TargetRefused>): Effect.Effect<Ended> =>
        Effect.gen(function*() {
          const request = {
            method: "POST",
            url: sub.url,
            headers: {
              "content-type": "application/json",
              "user-agent": "svc-webhooks/1",
              ...signedHeaders(sub.secrets, row.event_id, Math.floor(Date.now() / 1000), row.body)
            },
            body: row.body,
            timeout: settings.timeout,
            // The start of the answer is kept for the attempt log (decision 0134); the rest is read and dropped.
            keepBody: RESPONSE_BODY_BYTES
          }
          const [took, result] = yield* Effect.flatMap(target, (destination) => sendTo(destination, request)).pipe(
            Effect.map((answer) => ({ ok: true as const, answer })),
            Effect.catch((error) => Effect.succeed({ ok: false as const, error: error.message })),
            Effect.timed
          )
          const durationMs = Duration.toMillis(took)
          if (!result.ok) return onLadder(row, { statusCode: null, error: result.error, durationMs, responseBody: null }, undefined)
          const status = result.answer.status
          const record = {
            statusCode: status,
            error: status >= 300 && status < 400 ? "redirect_not_followed" : null,
            durationMs,
            responseBody: responseBodyText(result.answer.body)
          }
          if (status >= 200 && status < 300) return ending("succeeded", "succeeded", record)
          if (status === 410) return ending("failed", "failed", { ...record, error: "endpoint_gone" })
          return onLadder(row, record, retryAfterSeconds(header(result.answer.headers["retry-after"])))
        }).pipe(
          (effect) => recording ? traced(row, effect) : effect
        )

      /** A row released unsent: its subscription is gone or disabled (failed), or its secret does not open here (the ladder). */
      const unsent = (row: DeliveryRow, signer: Option.Option<Signer> | undefined): Ended =>
        signer === undefined
          ? ending("failed", "failed", { statusCode: null, error: "subscription_deleted", durationMs: null, responseBody: null })
          : Option.isNone(signer)
          ? onLadder(row, { statusCode: null, error: "signing_secret_unreadable", durationMs: null, responseBody: null }, undefined)
          // Left behind by a 410 (or a fan-out racing it): released, never sent.
          : ending("failed", "failed", { statusCode: null, error: "subscription_disabled", durationMs: null, responseBody: null })

      /**
       * A 410's end of its subscription, its result queued in `kept`: disabled before the result hands
       * the batch on (a claim in between then finds the next row's subscription disabled and releases
       * it unsent, instead of posting to a gone endpoint), then what waits behind it failed, which
       * would otherwise stay pending until someone turns it on again.
       */
      const endpointGone = (subscriptionId: string, kept: Deferred.Deferred<void, DatabaseUnavailable>) =>
        Effect.gen(function*() {
          yield* subscriptions.disable(subscriptionId, "endpoint_gone")
          yield* Deferred.await(kept)
          yield* deliveries.failPending(subscriptionId, "subscription_disabled")
        })

      /** The subscription's URL checked at a run's first request and reused by the rest (a refusal is not kept). */
      const targetOf = (sub: Signer): Effect.Effect<Destination, TargetRefused> => {
        let checked: Destination | undefined
        return Effect.suspend(() =>
          checked !== undefined ? Effect.succeed(checked) : Effect.tap(
            checkTarget(sub.url, allow, dnsServers, resolved),
            (destination) => Effect.sync(() => {
              checked = destination
            })
          )
        )
      }

      /**
       * A run: the claimed head, then the rows after it in its batch, one after another (order within
       * the batch), up to `run` of them, while each succeeds. The rows ahead are leased a window at a
       * time while the run sends (decision 0121), so the run waits on its receiver, not on the
       * database; it ends at the first row that does not succeed, and gives back the rest unsent.
       */
      const runOf = (head: DeliveryRow, token: string, signer: Option.Option<Signer> | undefined, lost: Deferred.Deferred<void>) =>
        Effect.gen(function*() {
          const sub = signer !== undefined && Option.isSome(signer) && signer.value.status !== "disabled" ? signer.value : undefined
          const runLength = sub !== undefined && sub.status === "active" ? Math.max(1, settings.run) : 1
          const window = Math.max(1, Math.min(WINDOW, runLength - 1))
          const queue: Array<DeliveryRow> = [head]
          let leased = 1
          let last = head
          let more = runLength > 1
          let ahead: Fiber.Fiber<ReadonlyArray<DeliveryRow>, DatabaseUnavailable> | undefined
          let aheadSent = 0
          // The write that keeps the run's last result or release (none before the first).
          let kept: Deferred.Deferred<void, DatabaseUnavailable> | undefined
          let outcome: AttemptOutcome = "lease_lost"
          // The row whose attempt is under way, until its result is queued.
          let current: DeliveryRow | undefined
          const target = sub === undefined ? Effect.die("no subscription to send to") : targetOf(sub)
          const lookAhead = Effect.gen(function*() {
            if (sub === undefined || !more || ahead !== undefined || queue.length > window / 2) return
            const count = Math.min(window, runLength - leased)
            if (count <= 0) return
            const position = { subscriptionId: last.subscription_id, batchId: last.batch_id, seq: last.seq, url: sub.url, secretSealed: sub.sealed }
            aheadSent = performance.now()
            ahead = yield* Effect.forkChild(deliveries.leaseAhead(position, count, leaseSeconds, token))
          })
          const sendAll = Effect.gen(function*() {
            while (true) {
              // Nothing is sent once a row of the run is another runner's.
              if (Deferred.isDoneUnsafe(lost)) return
              if (queue.length === 0) {
                if (ahead === undefined) return
                // A look-ahead that failed ends the run here (what it may have leased expires).
                const rows = yield* Effect.orElseSucceed(Fiber.join(ahead), () => [])
                ahead = undefined
                const count = Math.min(window, runLength - leased)
                more = rows.length === count && leased + rows.length < runLength
                for (const row of rows) held.set(row.id, { token, lost, since: aheadSent })
                leased += rows.length
                if (rows.length > 0) last = rows[rows.length - 1]!
                queue.push(...rows)
                if (queue.length === 0) return
              }
              yield* lookAhead
              // Not sure the next row is still ours: the run ends, the rest given back.
              if (!trusted(queue[0]!.id, token)) {
                outcome = "lease_lost"
                return
              }
              const row = queue.shift()!
              current = row
              const end = sub === undefined ? unsent(row, signer) : yield* attempt(row, sub, target)
              letGo(row.id, token)
              outcome = end.outcome
              kept = yield* enqueue({
                settlement: { id: row.id, profileId: row.profile_id, token, outcome: end.outcomeColumn, delaySeconds: end.delaySeconds, attempt: end.record },
                lost
              })
              current = undefined
              if (end.outcome !== "succeeded") {
                if (end.record.error === "endpoint_gone" && sub !== undefined) yield* endpointGone(sub.id, kept)
                return
              }
            }
          })
          // Whichever ends first: the run, or the heartbeat (or a write) finding a row another runner's.
          const raced = yield* Effect.exit(Effect.raceFirst(Effect.as(sendAll, true), Effect.as(Deferred.await(lost), false)))
          // The rows leased ahead and not sent go back, and so does a row whose attempt the race cut
          // short (its request may have gone: at least once); a look-ahead still running is waited
          // for. However the run ended: a row left held would have its lease renewed for ever, and
          // its batch would wait behind it.
          const pending = ahead
          const rest = pending === undefined ? [] : Option.getOrElse(Exit.getSuccess(yield* Fiber.await(pending)), (): ReadonlyArray<DeliveryRow> => [])
          const unsentRows = [...(current === undefined ? [] : [current]), ...queue, ...rest].map((row) => ({ id: row.id, token }))
          for (const row of unsentRows) letGo(row.id, token)
          if (unsentRows.length > 0) kept = yield* enqueue(undefined, unsentRows)
          if (kept !== undefined) yield* Deferred.await(kept)
          const ended = yield* raced
          // A result that was not written (its lease lost) tells it, as the heartbeat does.
          return !ended || Deferred.isDoneUnsafe(lost) ? "lease_lost" : outcome
        })

      const claimDue = (limit: number, busy: ReadonlyArray<Busy>) =>
        Effect.gen(function*() {
          const token = crypto.randomUUID()
          const sent = performance.now()
          // One claim and one subscription read for up to `limit` rows, instead of a read per delivery.
          // What the windows have under way counts against each subscription's share too.
          const counts = new Map(busy.map((b) => [b.subscriptionId, b.inFlight] as const))
          for (const [id, entry] of perSubscription) if (entry.windows > 0) counts.set(id, (counts.get(id) ?? 0) + entry.windows)
          const allBusy = [...counts].map(([subscriptionId, inFlight]) => ({ subscriptionId, inFlight }))
          const claimed = yield* deliveries.claim(limit, Math.max(1, settings.perSubscription), allBusy, leaseSeconds, token, plainHttp)
          if (claimed.length === 0) return []
          const subs = yield* subscriptions.byIds([...new Set(claimed.map((row) => row.subscription_id))])
          const live = new Map(subs.map((sub) => [sub.id, sub] as const))
          return claimed.map((head): ClaimedAttempt => {
            const sub = live.get(head.subscription_id)
            // Held from the claim: the heartbeat renews the head's lease while it waits for its turn.
            const lost = Deferred.makeUnsafe<void>()
            held.set(head.id, { token, lost, since: sent })
            // Its place in the subscription's share, held with the windows' (a run may wait for it briefly).
            const run = oneOf(head.subscription_id, false)(runOf(head, token, sub === undefined ? undefined : signerOf(sub), lost))
            return { subscriptionId: head.subscription_id, run }
          })
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

      // The layer's scope: a first attempt still under way when its fan-out writes the rows outlives the fan-out.
      const layerScope = yield* Effect.scope
      const firstBudget = Duration.toMillis(settings.firstAttempts)
      // A window's outbox rows are leased for half the delivery lease, renewed while it runs: a dead
      // process's rows are taken again that soon.
      const windowLease = Duration.millis(Duration.toMillis(settings.lease) / 2)
      const windowLeaseSeconds = leaseSecondsOf(windowLease)
      // Attempts the windows make at once (the worker's limit, apart from its claims).
      const firstSlots = yield* Semaphore.make(Math.max(1, settings.concurrency))
      // Attempts to one subscription at once, windows and claimed runs together: each holds one of its
      // `perSubscription` permits. A subscription's entry lives while someone holds or waits for one.
      const perSubscription = new Map<string, { readonly slots: Semaphore.Semaphore; users: number; windows: number }>()
      const oneOf = (id: string, window: boolean) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
        Effect.suspend(() => {
          const entry = perSubscription.get(id) ?? { slots: Semaphore.makeUnsafe(Math.max(1, settings.perSubscription)), users: 0, windows: 0 }
          perSubscription.set(id, entry)
          entry.users += 1
          const counted = window
            ? Effect.acquireUseRelease(Effect.sync(() => entry.windows += 1), () => effect, () => Effect.sync(() => entry.windows -= 1))
            : effect
          return entry.slots.withPermits(1)(counted).pipe(Effect.ensuring(Effect.sync(() => {
            entry.users -= 1
            if (entry.users === 0) perSubscription.delete(id)
          })))
        })

      /** A row to be written, as the attempt reads it (its first: no attempt yet, the ladder at its start). */
      const asRow = (d: NewDelivery): DeliveryRow => ({
        id: d.id,
        subscription_id: d.subscriptionId,
        profile_id: d.profileId,
        outbox_id: d.outboxId,
        event_id: d.eventId,
        event_type: d.eventType,
        body: d.body,
        status: "pending",
        attempts: 0,
        next_attempt_at: null,
        last_attempt_at: null,
        last_status_code: null,
        last_error: null,
        redelivery_of: null,
        created_at: "",
        completed_at: null,
        age_seconds: 0,
        traceparent: d.traceparent,
        tracestate: d.tracestate,
        batch_id: d.batchId,
        seq: d.seq
      })

      const firstOf = (ended: Ended): NonNullable<NewDelivery["first"]> =>
        ({ outcome: ended.outcomeColumn, delaySeconds: ended.delaySeconds, attempt: ended.record })

      /** A first attempt handed over: its row, the token its row is leased to, and whether that lease was lost. */
      interface Handed {
        readonly id: string
        readonly token: string
        readonly lost: Deferred.Deferred<void>
      }

      /** What became of a first attempt: ended in time, or under way when the rows are written (`token` leases its row). */
      type First = { readonly ended: Ended } | { readonly underway: string }

      /**
       * The first attempts of one fan-out (decision 0157): each (subscription, batch) in order, one
       * row after another while each succeeds, until `deadline`; a row whose attempt is still under
       * way then is handed over: written leased to it, its result settled as a claimed row's once
       * the fan-out has committed (`committed`), its lease renewed by the heartbeat meanwhile.
       * Only active subscriptions whose secrets open here; the others' rows are left to the worker.
       */
      const firstAttemptsOf = (
        fresh: ReadonlyArray<NewDelivery>,
        signers: ReadonlyMap<string, Signer>,
        deadline: number,
        /** Done when the window must close before its deadline (its outbox rows' lease lost). */
        closeNow: Deferred.Deferred<void>,
        /** False once the window cannot be sure it still holds its rows' lease: no attempt starts then. */
        holds: () => boolean,
        committed: Deferred.Deferred<boolean>,
        handedOver: Array<Handed>,
        ended: (row: NewDelivery) => void
      ) =>
        Effect.gen(function*() {
          const done = new Map<string, First>()
          const groups = new Map<string, Array<NewDelivery>>()
          for (const d of fresh) {
            // Not sent from here (paused, no secret that opens, plain http without the allow-list):
            // written at once, as a fan-out without a window writes it, for the worker.
            if (!signers.has(d.subscriptionId)) {
              ended(d)
              continue
            }
            const key = `${d.subscriptionId}|${d.batchId}`
            const group = groups.get(key)
            if (group === undefined) groups.set(key, [d])
            else group.push(d)
          }
          // The window: once it closes no group starts another attempt, and each attempt under way
          // then is handed over (its row written leased to it). One fiber per group, in the layer's
          // scope, so that such an attempt goes on after the fan-out; the fan-out waits for the rest.
          let closed = false
          let remaining = groups.size
          const allDone = Deferred.makeUnsafe<void>()
          const groupEnded = () => {
            remaining -= 1
            if (remaining === 0) Deferred.doneUnsafe(allDone, Exit.void)
          }
          const inFlight = new Map<string, NewDelivery>()
          const handedBy = new Map<string, Handed>()
          const runGroup = (key: string, group: ReadonlyArray<NewDelivery>) =>
            Effect.gen(function*() {
              const sub = signers.get(group[0]!.subscriptionId)!
              const target = targetOf(sub)
              for (const [at, d] of group.entries()) {
                if (closed || Date.now() >= deadline || Deferred.isDoneUnsafe(closeNow) || !holds()) break
                const row = asRow(d)
                inFlight.set(key, d)
                const end = yield* attempt(row, sub, target)
                inFlight.delete(key)
                const handed = handedBy.get(d.id)
                if (handed !== undefined) {
                  // Counted as ended when it was handed over; its row is the fan-out's to write.
                  if (yield* Deferred.await(committed)) yield* settleHandedOver(row, sub, handed, end)
                  return
                }
                // Disabled before anything after it is written: a claim of the next row then releases it
                // unsent, instead of posting to a gone endpoint (the window's end disables it again).
                if (end.record.error === "endpoint_gone") yield* Effect.ignore(subscriptions.disable(sub.id, "endpoint_gone"))
                done.set(d.id, { ended: end })
                // Its row is final: written while the others are sent (a row waiting for its retry is its batch's head).
                ended({ ...d, ready: d.ready || end.outcomeColumn === null, first: firstOf(end) })
                if (end.outcome !== "succeeded") {
                  // The batch stops here, so the rest of it is final too, and goes in the same write: left
                  // for the window's end, it would not be there when this row's retry hands the batch on.
                  group.slice(at + 1).forEach((rest, k) => ended({ ...rest, ready: k === 0 && end.outcomeColumn !== null }))
                  break
                }
              }
              groupEnded()
            // A subscription's share first: a group waiting for it holds none of the slots others could use.
            }).pipe(firstSlots.withPermits(1), oneOf(group[0]!.subscriptionId, true))
          if (remaining === 0) return done
          for (const [key, group] of groups) yield* Effect.forkIn(runGroup(key, group), layerScope)
          const timely = yield* Effect.raceAll([
            Effect.as(Deferred.await(allDone), true),
            Effect.as(Deferred.await(closeNow), false),
            Effect.as(Effect.sleep(Duration.millis(Math.max(0, deadline - Date.now()))), false)
          ])
          if (!timely) {
            closed = true
            for (const d of inFlight.values()) {
              const handed: Handed = { id: d.id, token: crypto.randomUUID(), lost: Deferred.makeUnsafe<void>() }
              handedBy.set(d.id, handed)
              done.set(d.id, { underway: handed.token })
              handedOver.push(handed)
              groupEnded()
            }
            yield* Deferred.await(allDone)
          }
          return done
        })

      /**
       * The result of a first attempt handed over, once its row is written leased to `token`: held
       * (the heartbeat renews the lease) until its result is queued, then recorded as a run's.
       */
      const settleHandedOver = (row: DeliveryRow, sub: Signer, { lost, token }: Handed, end: Ended) =>
        Effect.gen(function*() {
          letGo(row.id, token)
          const kept = yield* enqueue({
            settlement: { id: row.id, profileId: row.profile_id, token, outcome: end.outcomeColumn, delaySeconds: end.delaySeconds, attempt: end.record },
            lost
          })
          if (end.record.error === "endpoint_gone") yield* endpointGone(sub.id, kept)
        }).pipe(Effect.catchCause((cause) => Effect.logWarning("webhook worker: a first attempt's result was not recorded", cause)))

      /**
       * The rows as written after the first attempts: each attempted row with its result, the row
       * under way leased, and the head of each (subscription, batch) moved to its first row not ended.
       */
      const withFirsts = (fresh: ReadonlyArray<NewDelivery>, done: ReadonlyMap<string, First>): ReadonlyArray<NewDelivery> => {
        // A batch whose rows so far all ended: its next row is its head.
        const open = new Set<string>()
        return fresh.map((d) => {
          const key = `${d.subscriptionId}|${d.batchId}`
          const first = done.get(d.id)
          const ready = d.ready || open.has(key)
          open.delete(key)
          if (first === undefined) return ready === d.ready ? d : { ...d, ready }
          if ("underway" in first) return { ...d, ready, underway: first.underway }
          if (first.ended.outcomeColumn !== null) open.add(key)
          return { ...d, ready, first: firstOf(first.ended) }
        })
      }

      /** The signers of the subscriptions a fan-out may send to itself: active, with secrets that open here. */
      const firstSigners = (ids: ReadonlyArray<string>) =>
        Effect.map(subscriptions.byIds(ids), (subs) => {
          const signers = new Map<string, Signer>()
          for (const sub of subs) {
            if (sub.status !== "active" || (!plainHttp && !sub.url.startsWith("https://"))) continue
            const signer = signerOf(sub)
            if (Option.isSome(signer)) signers.set(sub.id, signer.value)
          }
          return signers
        })

      /**
       * The delivery rows of claimed outbox rows, one per (row, subscription that takes it), in outbox
       * order: one delivery batch per producer batch (`batchOf`), the first row of each (subscription,
       * batch) its head.
       */
      const deliveriesOf = (
        rows: ReadonlyArray<UnpublishedRow>,
        subs: ReadonlyArray<FanOutSubscription>,
        batchOf: (row: UnpublishedRow) => string
      ): Array<NewDelivery> => {
        const heads = new Set<string>()
        const fresh: Array<NewDelivery> = []
        rows.forEach((row, seq) => {
          const batchId = batchOf(row)
          // One body per row and variant, shared by the subscriptions that receive it alike: a
          // window holds its rows' bodies while it sends, a hundred subscriptions one string.
          const bodies: Array<{ readonly id: string; readonly body: string } | undefined> = [undefined, undefined]
          for (const subscription of subs) {
            if (subscription.profile_id !== row.profile_id || !receives(row, subscription)) continue
            const variant = withContact(row, subscription) ? 1 : 0
            const body = bodies[variant] ??= eventBody(row, variant === 1)
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
              eventId: body.id,
              eventType: row.topic,
              body: body.body,
              batchId,
              seq,
              traceparent: row.traceparent,
              tracestate: row.tracestate
            })
          }
        })
        return fresh
      }

      /** A new delivery batch per producer batch (rows written before batches were kept: one for all of them). */
      const newBatches = () => {
        const batches = new Map<string, string>()
        return (row: UnpublishedRow) => {
          const key = row.batch ?? ""
          const found = batches.get(key)
          if (found !== undefined) return found
          const made = crypto.randomUUID()
          batches.set(key, made)
          return made
        }
      }

      /**
       * Rows a fan-out that died had leased (decision 0157), taken again: some of their deliveries may
       * be written, with results. The rest are written waiting, in the delivery batch already begun
       * (so order holds across the two fan-outs), none a head; then each batch's first waiting row
       * becomes its head. Nothing is sent from here: the worker claims them.
       */
      const fanOutRetaken = (rows: ReadonlyArray<UnpublishedRow>, subs: ReadonlyArray<FanOutSubscription>) =>
        Effect.gen(function*() {
          const planned = deliveriesOf(rows, subs, newBatches())
          const begun = new Map<string, string>()
          for (const found of yield* deliveries.writtenBatches(planned)) begun.set(found.outbox_id, found.batch_id)
          // A producer batch's delivery batch: the one an earlier fan-out began for any of its rows
          // (the batch planned here is one per producer batch, so it stands for it).
          const byPlanned = new Map<string, string>()
          for (const d of planned) {
            const batchId = begun.get(d.outboxId)
            if (batchId !== undefined) byPlanned.set(d.batchId, batchId)
          }
          const fresh = planned.map((d) => ({ ...d, batchId: byPlanned.get(d.batchId) ?? d.batchId, ready: false }))
          yield* deliveries.insert(fresh, leaseSeconds)
          const groups = new Map(fresh.map((d) => [`${d.subscriptionId}|${d.batchId}`, { subscription_id: d.subscriptionId, batch_id: d.batchId }]))
          yield* deliveries.handOn([...groups.values()])
        })

      // Windows of first attempts under way at once (each holds its outbox rows by a lease), and the deliveries they hold.
      const windows = yield* Semaphore.make(FIRST_ATTEMPT_WINDOWS)
      let windowDeliveries = 0

      /**
       * A window of first attempts (decision 0157) for outbox rows leased under `token`: each row
       * written with its result as its attempt ends (a statement every few milliseconds, so a crash
       * repeats only what was in flight); then, in one transaction, the rows not written yet (waiting,
       * or leased to an attempt still under way) and the outbox rows published, only those still
       * leased to this fan-out.
       */
      const firstAttemptWindow = (rows: ReadonlyArray<UnpublishedRow>, fresh: ReadonlyArray<NewDelivery>, token: string, leasedAt: number) =>
        Effect.gen(function*() {
          // The attempts handed over learn whether their rows were written (a failure on the way: not).
          const committed = Deferred.makeUnsafe<boolean>()
          const handed: Array<Handed> = []
          // When the statement that writes the handed-over rows leased was sent.
          let writtenAt = 0
          const exit = yield* Effect.exit(Effect.gen(function*() {
            const deadline = Date.now() + firstBudget
            const signers = yield* firstSigners([...new Set(fresh.map((d) => d.subscriptionId))])
            let final: Array<NewDelivery> = []
            const early = new Set<string>()
            const flush = Effect.suspend(() => {
              const these = final
              final = []
              for (const d of these) early.add(d.id)
              return deliveries.insert(these, leaseSeconds)
            })
            // The rows' lease renewed while the window runs; lost (another fan-out took them), the window closes.
            const closeNow = Deferred.makeUnsafe<void>()
            let renewedAt = leasedAt
            yield* Effect.forkChild(heartbeat(
              windowLease,
              Effect.suspend(() => {
                const sent = performance.now()
                return Effect.flatMap(outbox.renewFanOut(rows, token, windowLeaseSeconds), (renewed) =>
                  renewed.length < rows.length ? Deferred.succeed(closeNow, undefined) : Effect.sync(() => {
                    renewedAt = sent
                  }))
              })
            ))
            // Past `leaseTrusted` the rows may be another fan-out's, which sends them too: the window
            // stops, so a stall repeats only attempts whose results it had not written, as a crash does.
            const holds = () => leaseTrusted(windowLease, renewedAt)
            const sending = yield* Effect.forkChild(firstAttemptsOf(fresh, signers, deadline, closeNow, holds, committed, handed, (d) => final.push(d)))
            while (sending.pollUnsafe() === undefined) {
              yield* Effect.raceFirst(Effect.asVoid(Fiber.await(sending)), Effect.sleep(FLUSH_INTERVAL))
              yield* flush
            }
            const written = withFirsts(fresh, yield* Fiber.join(sending))
            yield* flush
            // A 410 disables its subscription before the rest are written: no claim posts to it after.
            const gone = new Set(written.filter((d) => d.first?.attempt.error === "endpoint_gone").map((d) => d.subscriptionId))
            writtenAt = performance.now()
            yield* deliveries.transaction(Effect.gen(function*() {
              for (const id of gone) yield* subscriptions.disable(id, "endpoint_gone")
              // Only rows still leased to this fan-out: another took over the rest (and writes them).
              const kept = new Set(yield* outbox.publishLeased(rows, token))
              yield* deliveries.insert(written.filter((d) => !early.has(d.id) && kept.has(d.outboxId)), leaseSeconds)
              for (const id of gone) yield* deliveries.failPending(id, "subscription_disabled")
            }))
          }))
          // Held before they learn it: the heartbeat renews their rows' leases until their results are queued.
          if (Exit.isSuccess(exit)) for (const { id, lost, token: leased } of handed) held.set(id, { token: leased, lost, since: writtenAt })
          yield* Deferred.succeed(committed, Exit.isSuccess(exit))
          return yield* exit
        })

      /**
       * One fan-out. Without first attempts: the rows claimed, their deliveries written and the rows
       * published in one transaction. With them (decision 0157): the rows claimed and leased in a
       * short transaction, and a window of first attempts started for them; with
       * FIRST_ATTEMPT_WINDOWS windows already running, or WINDOW_DELIVERIES held by them, the fan-out
       * writes its rows for the worker.
       */
      const fanOutOnce = Effect.withSpan("Webhooks.fanOut")(Effect.gen(function*() {
        // Every window busy, or the windows holding their share of deliveries: this fan-out only
        // writes its rows, for the worker to claim (a window with a slow endpoint holds its own rows only).
        const windowed = firstBudget > 0 && windowDeliveries < WINDOW_DELIVERIES && (yield* windows.takeIfAvailable(1))
        const token = crypto.randomUUID()
        // Before the claim's transaction begins, so never later than the now() its lease counts from.
        const leasedAt = performance.now()
        const claim = yield* deliveries.transaction(Effect.gen(function*() {
          const rows = yield* outbox.claimUnpublished(settings.batchSize)
          if (rows.length === 0) return undefined
          const subs = yield* subscriptions.forFanOut([...new Set(rows.map((row) => row.profile_id))])
          if (rows.some((row) => row.retaken)) {
            yield* fanOutRetaken(rows, subs)
          } else if (!windowed) {
            yield* deliveries.insert(deliveriesOf(rows, subs, newBatches()), leaseSeconds)
          } else {
            yield* outbox.leaseForFanOut(rows, token, windowLeaseSeconds)
            return { rows, subs, leased: true }
          }
          yield* outbox.markPublished(rows)
          return { rows, subs, leased: false }
        })).pipe(Effect.onExit((exit) =>
          // The window's permit goes with the window when one starts; otherwise back now.
          windowed && !(Exit.isSuccess(exit) && exit.value?.leased === true) ? windows.release(1) : Effect.void
        ))
        if (claim === undefined) return 0
        if (claim.leased) {
          const fresh = deliveriesOf(claim.rows, claim.subs, newBatches())
          windowDeliveries += fresh.length
          yield* Effect.forkIn(
            firstAttemptWindow(claim.rows, fresh, token, leasedAt).pipe(
              Effect.catchCause((cause) =>
                Cause.hasInterruptsOnly(cause)
                  ? Effect.void
                  // Its outbox rows' lease runs out: the next fan-out takes them again (and writes only what is missing).
                  : Effect.logWarning("webhook worker: a window of first attempts failed", cause)
              ),
              Effect.ensuring(Effect.andThen(Effect.sync(() => {
                windowDeliveries -= fresh.length
              }), windows.release(1)))
            ),
            layerScope
          )
        }
        return claim.rows.length
      }))

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
