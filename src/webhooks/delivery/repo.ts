/**
 * The owner of `webhook_deliveries` (decision 0078): one durable row per (subscription, event),
 * written in outbox order by batches, claimed under a lease whose token fences every later
 * write, and the delivery log; and of `webhook_delivery_attempts` (decision 0112): every
 * attempt, appended by the statement that records its result.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"

export interface NewDelivery {
  readonly id: string
  readonly subscriptionId: string
  readonly profileId: string
  readonly outboxId: string
  readonly eventId: string
  readonly eventType: string
  readonly body: string
  readonly batchId: string
  readonly seq: number
  /** The W3C context of the request that queued the event (its outbox row's). */
  readonly traceparent: string | null
  readonly tracestate: string | null
}

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

export const DeliveryRow = Schema.Struct({
  id: Schema.String,
  subscription_id: Schema.String,
  profile_id: Schema.String,
  outbox_id: Schema.String,
  event_id: Schema.String,
  event_type: Schema.String,
  body: Schema.String,
  status: Schema.Literals(["pending", "succeeded", "failed"]),
  attempts: Schema.Int,
  next_attempt_at: Schema.NullOr(Schema.String),
  last_attempt_at: Schema.NullOr(Schema.String),
  last_status_code: Schema.NullOr(Schema.Int),
  last_error: Schema.NullOr(Schema.String),
  redelivery_of: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  completed_at: Schema.NullOr(Schema.String),
  /** Seconds since the first attempt (0 before it): where the ladder stands. */
  age_seconds: Schema.Finite,
  traceparent: Schema.NullOr(Schema.String),
  tracestate: Schema.NullOr(Schema.String)
})
export type DeliveryRow = typeof DeliveryRow.Type

export interface DeliveryFilter {
  readonly profileId: string
  readonly subscriptionId: string | undefined
  readonly status: string | undefined
  readonly after: Option.Option<{ readonly at: string; readonly id: string }>
  readonly limit: number
}

export interface AttemptRecord {
  readonly statusCode: number | null
  readonly error: string | null
  /** How long the request took; null when none was sent. */
  readonly durationMs: number | null
}

/** What an error keeps of its text, in the row and in the attempt log (the table checks it too). */
export const MAX_ERROR_LENGTH = 500

const bounded = (error: string | null) => (error === null ? null : error.slice(0, MAX_ERROR_LENGTH))

export const AttemptRow = Schema.Struct({
  id: Schema.String,
  delivery_id: Schema.String,
  attempt: Schema.Int,
  attempted_at: Schema.String,
  status_code: Schema.NullOr(Schema.Int),
  duration_ms: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String)
})
export type AttemptRow = typeof AttemptRow.Type

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class WebhookDeliveriesRepo extends Context.Service<WebhookDeliveriesRepo, {
  /** Inserts the rows; a (subscription, event) already delivered once is skipped. */
  readonly insert: (rows: ReadonlyArray<NewDelivery>) => Repo<void>
  /**
   * Claims up to `limit` due deliveries of subscriptions that are not paused, each the first pending one of its
   * (subscription, batch): `attempts` + 1 and a lease under `token` until `leaseSeconds` from now.
   * Without `plainHttp` (no development allow-list here), plain-http subscriptions are left to a
   * process that has one: this one would refuse them anyway.
   */
  readonly claim: (limit: number, leaseSeconds: number, token: string, plainHttp: boolean) => Repo<ReadonlyArray<DeliveryRow>>
  /** The attempt succeeded (false: the lease was lost, nothing written). */
  readonly succeed: (id: string, token: string, attempt: AttemptRecord) => Repo<boolean>
  /** The attempt failed; the next one is `delaySeconds` from now. */
  readonly retry: (id: string, token: string, attempt: AttemptRecord, delaySeconds: number) => Repo<boolean>
  /** The attempt failed for good (ladder spent, 410). */
  readonly fail: (id: string, token: string, attempt: AttemptRecord) => Repo<boolean>
  /** A deleted subscription's waiting deliveries end `failed`. */
  readonly failPending: (subscriptionId: string, reason: string) => Repo<void>
  readonly list: (filter: DeliveryFilter) => Repo<ReadonlyArray<DeliveryRow>>
  readonly find: (profileId: string, id: string) => Repo<Option.Option<DeliveryRow>>
  /**
   * The attempts of `of`'s event to its subscription, the delivery and every redelivery of it, in
   * the order they were recorded, after the attempt `afterId`; `limit` + 1 rows.
   */
  readonly attempts: (of: DeliveryRow, afterId: string | null, limit: number) => Repo<ReadonlyArray<AttemptRow>>
  /** A new pending row repeating `of` (its own batch), due now. */
  readonly redeliver: (of: DeliveryRow, id: string) => Repo<DeliveryRow>
  /** Runs `effect` in one transaction (the fan-out: outbox rows claimed, deliveries written, rows published). */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/WebhookDeliveriesRepo") {
  static readonly layer = Layer.effect(WebhookDeliveriesRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const columns = (alias: string) =>
        sql.literal(`${alias}.id, ${alias}.subscription_id, ${alias}.profile_id, ${alias}.outbox_id, ${alias}.event_id,
          ${alias}.event_type, ${alias}.body, ${alias}.status, ${alias}.attempts,
          CASE WHEN ${alias}.status = 'pending' THEN ${iso(`${alias}.next_attempt_at`)} END AS next_attempt_at,
          ${iso(`${alias}.last_attempt_at`)} AS last_attempt_at, ${alias}.last_status_code, ${alias}.last_error,
          ${alias}.redelivery_of, ${iso(`${alias}.created_at`)} AS created_at, ${iso(`${alias}.completed_at`)} AS completed_at,
          extract(epoch FROM now() - COALESCE(${alias}.first_attempt_at, now()))::float8 AS age_seconds,
          ${alias}.traceparent, ${alias}.tracestate`)
      const many = decodeRows(DeliveryRow)
      const one = decodeFirstRow(DeliveryRow)

      const insert = (rows: ReadonlyArray<NewDelivery>) =>
        rows.length === 0 ? Effect.void : Effect.asVoid(sql`
          INSERT INTO webhook_deliveries (id, subscription_id, profile_id, outbox_id, event_id, event_type, body, batch_id, seq,
                                          traceparent, tracestate, created_at)
          -- A microsecond per position: one batch's rows get increasing times, so the log lists them in
          -- order (clock_timestamp() is too coarse on PGlite).
          SELECT t.*, now() + make_interval(secs => t.seq / 1000000.0)
          FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.subscriptionId)}::uuid[],
                      ${rows.map((r) => r.profileId)}::uuid[], ${rows.map((r) => r.outboxId)}::uuid[],
                      ${rows.map((r) => r.eventId)}::text[], ${rows.map((r) => r.eventType)}::text[],
                      ${rows.map((r) => r.body)}::text[], ${rows.map((r) => r.batchId)}::uuid[],
                      ${rows.map((r) => r.seq)}::int[],
                      array_replace(${rows.map((r) => r.traceparent ?? "")}::text[], '', NULL),
                      array_replace(${rows.map((r) => r.tracestate ?? "")}::text[], '', NULL))
            AS t(id, subscription_id, profile_id, outbox_id, event_id, event_type, body, batch_id, seq, traceparent, tracestate)
          ON CONFLICT (subscription_id, outbox_id) WHERE redelivery_of IS NULL DO NOTHING`)

      const claim = (limit: number, leaseSeconds: number, token: string, plainHttp: boolean) =>
        many(sql`
          UPDATE webhook_deliveries d
          SET attempts = d.attempts + 1, lease_token = ${token}, lease_until = now() + make_interval(secs => ${leaseSeconds}),
              first_attempt_at = COALESCE(d.first_attempt_at, now())
          WHERE d.id IN (
            SELECT c.id FROM webhook_deliveries c
            JOIN webhook_subscriptions s ON s.id = c.subscription_id
            WHERE c.status = 'pending' AND c.next_attempt_at <= now()
              AND (c.lease_until IS NULL OR c.lease_until < now())
              -- A deleted or disabled subscription's rows are claimed too, to be released (failed), never sent.
              AND (s.status <> 'paused' OR s.deleted_at IS NOT NULL)
              AND (${plainHttp} OR s.url LIKE 'https://%')
              AND NOT EXISTS (
                SELECT 1 FROM webhook_deliveries e
                WHERE e.subscription_id = c.subscription_id AND e.batch_id = c.batch_id
                  AND e.status = 'pending' AND e.seq < c.seq)
            ORDER BY c.next_attempt_at, c.seq
            LIMIT ${limit}
            FOR UPDATE OF c SKIP LOCKED)
          RETURNING ${columns("d")}`)

      /**
       * Records an attempt under its lease: `outcome` ends the row, else the next attempt is
       * `delaySeconds` away. The same statement appends the attempt to the log (one round trip,
       * one commit: the result and its log entry are kept or lost together); a lost lease writes neither.
       */
      const finish = (id: string, token: string, attempt: AttemptRecord, outcome: "succeeded" | "failed" | null, delaySeconds: number) => {
        const error = bounded(attempt.error)
        const durationMs = attempt.durationMs === null ? null : Math.max(0, Math.round(attempt.durationMs))
        return Effect.map(
          sql`WITH done AS (
                UPDATE webhook_deliveries SET
                  status = COALESCE(${outcome}, status),
                  completed_at = CASE WHEN ${outcome}::text IS NULL THEN NULL ELSE now() END,
                  next_attempt_at = now() + make_interval(secs => ${delaySeconds}),
                  last_status_code = ${attempt.statusCode}, last_error = ${error},
                  lease_token = NULL, lease_until = NULL, last_attempt_at = now()
                WHERE id = ${id} AND lease_token = ${token} AND status = 'pending'
                RETURNING id, subscription_id, outbox_id, attempts)
              INSERT INTO webhook_delivery_attempts (delivery_id, subscription_id, outbox_id, attempt, attempted_at, status_code, duration_ms, error)
              -- When the request started: the result is recorded as it ends.
              SELECT id, subscription_id, outbox_id, attempts, now() - make_interval(secs => COALESCE(${durationMs}::int, 0) / 1000.0),
                     ${attempt.statusCode}::int, ${durationMs}::int, ${error}::text
              FROM done
              RETURNING delivery_id`,
          (rows) => rows.length > 0
        )
      }

      const succeed = (id: string, token: string, attempt: AttemptRecord) => finish(id, token, attempt, "succeeded", 0)
      const retry = (id: string, token: string, attempt: AttemptRecord, delaySeconds: number) => finish(id, token, attempt, null, delaySeconds)
      const fail = (id: string, token: string, attempt: AttemptRecord) => finish(id, token, attempt, "failed", 0)

      const failPending = (subscriptionId: string, reason: string) =>
        Effect.asVoid(sql`
          UPDATE webhook_deliveries SET status = 'failed', completed_at = now(), last_error = ${bounded(reason)},
                 lease_token = NULL, lease_until = NULL
          WHERE subscription_id = ${subscriptionId} AND status = 'pending'`)

      const list = ({ after, limit, profileId, status, subscriptionId }: DeliveryFilter) =>
        many(sql`
          SELECT ${columns("d")} FROM webhook_deliveries d
          WHERE d.profile_id = ${profileId}
            AND ${subscriptionId === undefined ? sql`true` : sql`d.subscription_id = ${subscriptionId}`}
            AND ${status === undefined ? sql`true` : sql`d.status = ${status}`}
            AND ${Option.match(after, {
          onNone: () => sql`true`,
          onSome: (keyset) => sql`(d.created_at, d.id) < (${keyset.at}::timestamptz, ${keyset.id}::uuid)`
        })}
          ORDER BY d.created_at DESC, d.id DESC
          LIMIT ${limit + 1}`)

      const find = (profileId: string, id: string) =>
        one(sql`SELECT ${columns("d")} FROM webhook_deliveries d WHERE d.id = ${id} AND d.profile_id = ${profileId}`)

      const attempts = (of: DeliveryRow, afterId: string | null, limit: number) =>
        decodeRows(AttemptRow)(sql`
          SELECT a.id::text AS id, a.delivery_id, a.attempt, ${sql.literal(iso("a.attempted_at"))} AS attempted_at,
                 a.status_code, a.duration_ms, a.error
          FROM webhook_delivery_attempts a
          WHERE a.subscription_id = ${of.subscription_id} AND a.outbox_id = ${of.outbox_id}
            AND ${afterId === null ? sql`true` : sql`a.id > ${afterId}::bigint`}
          ORDER BY a.id
          LIMIT ${limit + 1}`)

      const redeliver = (of: DeliveryRow, id: string) =>
        Effect.flatMap(
          one(sql`
            INSERT INTO webhook_deliveries AS d
              (id, subscription_id, profile_id, outbox_id, event_id, event_type, body, batch_id, seq, redelivery_of,
               traceparent, tracestate)
            VALUES (${id}, ${of.subscription_id}, ${of.profile_id}, ${of.outbox_id}, ${of.event_id}, ${of.event_type},
                    ${of.body}, ${id}, 0, ${of.id}, ${of.traceparent}, ${of.tracestate})
            RETURNING ${columns("d")}`),
          (found) => Option.match(found, { onNone: () => Effect.die("the insert returned no row"), onSome: Effect.succeed })
        )

      return {
        ...atDatabaseBoundary({ insert, claim, succeed, retry, fail, failPending, list, find, attempts, redeliver }),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
