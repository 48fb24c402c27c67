/**
 * The owner of `webhook_deliveries` (decision 0078): one durable row per (subscription, event),
 * written in outbox order by batches, claimed under a lease whose token fences every later
 * write, and the delivery log; and of `webhook_delivery_attempts` (decision 0112): every
 * attempt, appended by the statement that records its result. Only a batch's head (`ready`,
 * decision 0118) is claimed; the statement that ends it makes the next row the head.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { BacklogRow } from "../../platform/backlog.ts"
import { keyedWrite, keyedWriteSettings } from "../../platform/claim-settings.ts"
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
  /** The first row of its (subscription, batch): the only one that may be attempted now. */
  readonly ready: boolean
  /**
   * Its first attempt, made by the fan-out before the row is written (decision 0157): the row is
   * written with its result, or, while that attempt is still under way, leased to `underway`, whose
   * result is recorded later as a claimed row's. Neither: written waiting, for the worker to claim.
   */
  readonly first?: { readonly outcome: Settlement["outcome"]; readonly delaySeconds: number; readonly attempt: AttemptRecord } | undefined
  readonly underway?: string | undefined
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
  tracestate: Schema.NullOr(Schema.String),
  /** The producer batch and the place in it (order holds within a batch). */
  batch_id: Schema.String,
  seq: Schema.Int
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
  /** The start of the answer's body (decision 0134); null when no answer came or it was empty. */
  readonly responseBody: string | null
}

/** What an error keeps of its text, in the row and in the attempt log (the table checks it too). */
export const MAX_ERROR_LENGTH = 500

const bounded = (error: string | null) => (error === null ? null : error.slice(0, MAX_ERROR_LENGTH))

/** What the attempt log keeps of an answer's body, in characters (migration 0068 checks it too). */
export const MAX_RESPONSE_BODY_LENGTH = 1000

export const AttemptRow = Schema.Struct({
  id: Schema.String,
  delivery_id: Schema.String,
  attempt: Schema.Int,
  attempted_at: Schema.String,
  status_code: Schema.NullOr(Schema.Int),
  duration_ms: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  response_body: Schema.NullOr(Schema.String)
})
export type AttemptRow = typeof AttemptRow.Type

/** One attempt's result, recorded under the lease `token` that claimed it. */
export interface Settlement {
  readonly id: string
  /** The row's profile: with the id, the row's whole key (migration 0064). */
  readonly profileId: string
  readonly token: string
  /** Ends the row; null: it waits `delaySeconds` for its next attempt. */
  readonly outcome: "succeeded" | "failed" | null
  readonly delaySeconds: number
  readonly attempt: AttemptRecord
}

/** Where a run of a batch stands: the row after which `leaseAhead` leases, and the subscription as the run signs for it. */
export interface RunPosition {
  readonly subscriptionId: string
  readonly batchId: string
  readonly seq: number
  readonly url: string
  readonly secretSealed: string
}

/** A subscription's attempts this process has under way (its claim takes at most the rest of the limit). */
export interface Busy {
  readonly subscriptionId: string
  readonly inFlight: number
}

/** The columns a `DeliveryRow` reads, of the row aliased `alias`. */
const deliveryColumns = (sql: SqlClient, alias: string) =>
  sql.literal(`${alias}.id, ${alias}.subscription_id, ${alias}.profile_id, ${alias}.outbox_id, ${alias}.event_id,
    ${alias}.event_type, ${alias}.body, ${alias}.status, ${alias}.attempts,
    CASE WHEN ${alias}.status = 'pending' THEN ${iso(`${alias}.next_attempt_at`)} END AS next_attempt_at,
    ${iso(`${alias}.last_attempt_at`)} AS last_attempt_at, ${alias}.last_status_code, ${alias}.last_error,
    ${alias}.redelivery_of, ${iso(`${alias}.created_at`)} AS created_at, ${iso(`${alias}.completed_at`)} AS completed_at,
    extract(epoch FROM now() - COALESCE(${alias}.first_attempt_at, now()))::float8 AS age_seconds,
    ${alias}.traceparent, ${alias}.tracestate, ${alias}.batch_id::text AS batch_id, ${alias}.seq`)

export interface ClaimArguments {
  readonly limit: number
  readonly perSubscription: number
  readonly busy: ReadonlyArray<Busy>
  readonly leaseSeconds: number
  readonly token: string
  readonly plainHttp: boolean
}

/**
 * The claim (see `claim` below), as a statement: test/api/webhooks-claim-plan.test.ts checks its
 * generic plan's cost at growing backlogs.
 */
export const claimStatement = (sql: SqlClient, { busy, leaseSeconds, limit, perSubscription, plainHttp, token }: ClaimArguments) =>
  sql`
    UPDATE webhook_deliveries d
    SET lease_token = ${token}, lease_until = now() + make_interval(secs => ${leaseSeconds}),
        first_attempt_at = COALESCE(d.first_attempt_at, now())
    FROM (
      SELECT h.tid FROM webhook_subscriptions s
      LEFT JOIN unnest(${busy.map((b) => b.subscriptionId)}::uuid[], ${busy.map((b) => b.inFlight)}::int[]) AS b(subscription_id, n)
        ON b.subscription_id = s.id
      -- Each subscription's due heads, oldest first, through webhook_deliveries_ready; the read stops
      -- at what this subscription may still take, so rows behind a head are never read.
      CROSS JOIN LATERAL (
        SELECT c.ctid AS tid, c.next_attempt_at, c.seq FROM webhook_deliveries c
        WHERE c.subscription_id = s.id AND c.profile_id = s.profile_id AND c.status = 'pending' AND c.ready AND c.next_attempt_at <= now()
          AND (c.lease_until IS NULL OR c.lease_until < now())
        ORDER BY c.next_attempt_at, c.seq
        LIMIT least(${limit}::int, greatest(0, ${perSubscription}::int - COALESCE(b.n, 0)))
        FOR UPDATE OF c SKIP LOCKED) h
      -- A deleted or disabled subscription's rows are claimed too, to be released (failed), never sent.
      WHERE (s.status <> 'paused' OR s.deleted_at IS NOT NULL)
        AND (${plainHttp} OR s.url LIKE 'https://%')
      ORDER BY h.next_attempt_at, h.seq
      LIMIT ${limit}) picked
    -- Each row updated by the tuple id of the version locked above (no one else can change it before
    -- the update): a join on the key let a plan made while the table looked small hash every pending
    -- row (17-28 ms a claim at a 20,000-row backlog, auto_explain, issue 34).
    WHERE d.ctid = picked.tid AND d.status = 'pending' AND (d.lease_until IS NULL OR d.lease_until < now())
    RETURNING ${deliveryColumns(sql, "d")}`

// Each read stops at its cap through an index that holds exactly its rows (migration 0056).
const backlogColumns = (sql: SqlClient, countCap: number, rateCap: number) =>
  sql`
    (SELECT count(*)::int FROM (SELECT 1 FROM webhook_deliveries c
      WHERE c.subscription_id = s.id AND c.status = 'pending' LIMIT ${countCap}) n) AS pending,
    (SELECT greatest(0, floor(extract(epoch FROM now() - c.created_at)))::int FROM webhook_deliveries c
      WHERE c.subscription_id = s.id AND c.status = 'pending' ORDER BY c.created_at LIMIT 1) AS oldest_pending_age_seconds,
    (SELECT count(*)::int FROM (SELECT 1 FROM webhook_deliveries c
      WHERE c.subscription_id = s.id AND c.status = 'succeeded' AND c.completed_at > now() - interval '60 seconds'
      LIMIT ${rateCap}) n) AS delivered_last_minute`

/**
 * The backlogs of these subscriptions (see `backlogs` below), as a statement:
 * test/api/backlog-plan.test.ts checks its generic plan at growing backlogs.
 */
export const backlogStatement = (sql: SqlClient, subscriptionIds: ReadonlyArray<string>, countCap: number, rateCap: number) =>
  sql`SELECT s.id::text AS id, ${backlogColumns(sql, countCap, rateCap)} FROM unnest(${subscriptionIds}::uuid[]) AS s(id)`

/**
 * The heartbeat's renewal (see `renew` below), as a statement: test/api/lease-takeover.test.ts
 * checks that its generic plan, under `keyedWriteSettings`, reads through the primary key.
 */
export const renewStatement = (sql: SqlClient, held: ReadonlyArray<{ readonly id: string; readonly token: string }>, leaseSeconds: number) =>
  sql<{ id: string }>`
    UPDATE webhook_deliveries d SET lease_until = now() + make_interval(secs => ${leaseSeconds})
    FROM unnest(${held.map((h) => h.id)}::uuid[], ${held.map((h) => h.token)}::uuid[]) AS t(id, token)
    -- By key, not by a tuple id read in the statement's snapshot (decision 0153): a row another
    -- transaction changed meanwhile (a batch handed on to it) is rechecked and renewed, where a tuple
    -- id would skip it and the run would stop as if its lease were lost
    -- (test/api/webhooks-hand-on.test.ts). Run under keyedWriteSettings, so the key is probed
    -- whatever the statistics. No status test: ending a row clears its token.
    WHERE d.id = t.id AND d.lease_token = t.token
    RETURNING d.id`

/**
 * The first pending row of the (subscription, batch) of `alias` after its `seq` (`nx`, joined when there
 * is one), by a row comparison in the order of `webhook_deliveries_batch`: only that index answers it
 * with one tuple, so no plan can walk a subscription's whole backlog instead (with equalities and
 * `ORDER BY seq`, a plan built without statistics took `webhook_deliveries_pending_age` and read
 * every pending row of the subscription for each step, the cost growing with the backlog). It
 * answers the row's key: the statement updates it by that key, under `keyedWriteSettings` (a probe
 * of the primary key whatever the statistics). Not by its tuple id: read in the statement's
 * snapshot, that is the version before a run's look-ahead leased the row meanwhile, PostgreSQL
 * skips an update whose tuple id no longer matches, and the hand-on was lost
 * (test/api/webhooks-hand-on.test.ts: the batch kept no head once that run's process died).
 */
const nextInBatch = (sql: SqlClient, alias: string) =>
  sql.literal(`JOIN LATERAL (
          SELECT e.id, e.profile_id, e.subscription_id, e.batch_id FROM webhook_deliveries e
          WHERE e.status = 'pending' AND (e.subscription_id, e.batch_id, e.seq) > (${alias}.subscription_id, ${alias}.batch_id, ${alias}.seq)
          ORDER BY e.subscription_id, e.batch_id, e.seq LIMIT 1) nx
          ON nx.subscription_id = ${alias}.subscription_id AND nx.batch_id = ${alias}.batch_id`)

/**
 * The results' record (see `settle` below), as a statement: test/api/webhooks-claim-plan.test.ts
 * checks its generic plan at growing backlogs.
 */
export const settleStatement = (sql: SqlClient, results: ReadonlyArray<Settlement>) =>
  sql<{ ended_id: string }>`
    WITH input AS (
      -- '' and -1 stand for none: the driver cannot type an array holding only nulls; the delays go
      -- as text, since whole and fractional numbers would be typed apart.
      SELECT t.id, t.profile_id, t.token, NULLIF(t.outcome, '') AS outcome, t.delay::float8 AS delay, NULLIF(t.code, -1) AS code,
             NULLIF(t.error, '') AS error, NULLIF(t.duration_ms, -1) AS duration_ms, NULLIF(t.body, '') AS body
      FROM unnest(${results.map((r) => r.id)}::uuid[], ${results.map((r) => r.profileId)}::uuid[], ${results.map((r) => r.token)}::uuid[],
                  ${results.map((r) => r.outcome ?? "")}::text[], ${results.map((r) => String(r.delaySeconds))}::text[],
                  ${results.map((r) => r.attempt.statusCode ?? -1)}::int[], ${results.map((r) => bounded(r.attempt.error) ?? "")}::text[],
                  ${results.map((r) => r.attempt.durationMs === null ? -1 : Math.max(0, Math.round(r.attempt.durationMs)))}::int[],
                  ${results.map((r) => r.attempt.responseBody ?? "")}::text[])
        AS t(id, profile_id, token, outcome, delay, code, error, duration_ms, body)),
    done AS (
      -- A row that waits for its next attempt is its batch's head (every row before it ended).
      UPDATE webhook_deliveries d SET
        status = COALESCE(i.outcome, d.status),
        completed_at = CASE WHEN i.outcome IS NULL THEN NULL ELSE now() END,
        next_attempt_at = now() + make_interval(secs => i.delay),
        attempts = d.attempts + 1,
        ready = d.ready OR i.outcome IS NULL,
        last_status_code = i.code, last_error = i.error,
        lease_token = NULL, lease_until = NULL, last_attempt_at = now()
      FROM input i
      -- Each row found through the primary key, then updated by its tuple id, as the renewal
      -- (renewStatement): with hundreds of results a join on the key got a custom plan that read
      -- every pending row into a hash (38 ms a statement at a 40,000-row backlog).
      CROSS JOIN LATERAL (
        SELECT w.ctid AS tid FROM webhook_deliveries w
        WHERE w.id = i.id AND w.profile_id = i.profile_id ORDER BY w.id LIMIT 1) h
      WHERE d.ctid = h.tid AND d.lease_token = i.token AND d.status = 'pending'
      RETURNING d.id, d.profile_id, d.subscription_id, d.outbox_id, d.attempts, d.batch_id, d.seq, i.outcome, i.code, i.error, i.duration_ms, i.body),
    following AS (
      -- The last row recorded here of each (subscription, batch), when it ended, hands the batch on:
      -- the next pending row becomes the head. Only the last: the rows of one run are recorded in
      -- order, and a row recorded here is not updated twice in one statement.
      UPDATE webhook_deliveries n SET ready = true
      FROM (
        SELECT DISTINCT ON (d.subscription_id, d.batch_id) d.subscription_id, d.batch_id, d.seq, d.outcome
        FROM done d ORDER BY d.subscription_id, d.batch_id, d.seq DESC) f
      ${nextInBatch(sql, "f")}
      WHERE f.outcome IS NOT NULL AND n.id = nx.id AND n.profile_id = nx.profile_id AND n.status = 'pending' AND NOT n.ready),
    logged AS (
      INSERT INTO webhook_delivery_attempts (delivery_id, profile_id, subscription_id, outbox_id, attempt, attempted_at, status_code, duration_ms, error,
                                             response_body)
      -- When the request started: the result is recorded as it ends.
      SELECT id, profile_id, subscription_id, outbox_id, attempts, now() - make_interval(secs => COALESCE(duration_ms, 0) / 1000.0),
             code, duration_ms, error, body
      FROM done)
    SELECT d.id::text AS ended_id FROM done d`

/** The most rows one look-ahead leases (a run's window). */
export const MAX_LEASE_AHEAD = 16

/**
 * The rows after `after` in its batch that a run may send next (see `leaseAhead` below), as a
 * statement: test/api/webhooks-claim-plan.test.ts checks its generic plan at growing backlogs.
 */
export const leaseAheadStatement = (sql: SqlClient, after: RunPosition, count: number, leaseSeconds: number, token: string) =>
  sql`
    UPDATE webhook_deliveries d
    SET lease_token = ${token}, lease_until = now() + make_interval(secs => ${leaseSeconds}),
        first_attempt_at = COALESCE(d.first_attempt_at, now())
    FROM (
      SELECT w.id, w.profile_id FROM (
        SELECT e.id, e.profile_id, bool_and(e.next_attempt_at <= now() AND (e.lease_until IS NULL OR e.lease_until < now()))
                 OVER (ORDER BY e.seq) AS ok, row_number() OVER (ORDER BY e.seq) AS n
        FROM (
          -- The next rows in batch order, one walk of webhook_deliveries_batch from the run's row: a row
          -- comparison and its order only, which no other index answers without reading and sorting
          -- every row after it. With the batch's equalities here as well, a plan made while the table
          -- looked small read the subscription's whole backlog through webhook_deliveries_pending_age
          -- and sorted it, every look-ahead (199 rows for 16 at 200 events a subscription, auto_explain,
          -- issue 34). Its length is a constant: a parameter's LIMIT is costed as a share of the rows
          -- the planner expects, which follow the table. The walk may run into the next batch; those
          -- rows are dropped below, and so are those past the count asked.
          SELECT e.id, e.profile_id, e.subscription_id, e.batch_id, e.seq, e.next_attempt_at, e.lease_until FROM webhook_deliveries e
          WHERE e.status = 'pending' AND (e.subscription_id, e.batch_id, e.seq) > (${after.subscriptionId}::uuid, ${after.batchId}::uuid, ${after.seq}::int)
          ORDER BY e.subscription_id, e.batch_id, e.seq
          LIMIT ${sql.literal(String(MAX_LEASE_AHEAD))}) e
        WHERE e.subscription_id = ${after.subscriptionId} AND e.batch_id = ${after.batchId}) w
      -- Up to the first row that may not go now, and only while the subscription is live with the URL
      -- and secret the run signs for.
      WHERE w.ok AND w.n <= ${Math.min(count, MAX_LEASE_AHEAD)} AND EXISTS (
        SELECT 1 FROM webhook_subscriptions s
        WHERE s.id = ${after.subscriptionId} AND s.status = 'active' AND s.deleted_at IS NULL
          AND s.url = ${after.url} AND s.secret_sealed = ${after.secretSealed})) picked
    -- Checked again on the row as it is now: a lease taken meanwhile is not taken twice. By the key, not
    -- the tuple id: a row another statement changed meanwhile (the result before it handing the
    -- batch on) is rechecked and leased, where a tuple id would skip it and leave a gap in the run.
    WHERE d.id = picked.id AND d.profile_id = picked.profile_id AND d.status = 'pending' AND (d.lease_until IS NULL OR d.lease_until < now())
    RETURNING ${deliveryColumns(sql, "d")}`

/**
 * The fan-out's insert (see `insert` below), as a statement. A row whose first attempt the fan-out
 * made is written with its result and its attempt logged in the same statement (decision 0157): a
 * delivery that succeeds at once is one row written once, where a claimed one is written three times.
 */
export const insertStatement = (sql: SqlClient, rows: ReadonlyArray<NewDelivery>, leaseSeconds: number) =>
  sql`
    WITH t AS (
      -- '' and -1 stand for none, as in settleStatement; \`tried\`: an attempt was made (its result is here).
      SELECT * FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.subscriptionId)}::uuid[],
                  ${rows.map((r) => r.profileId)}::uuid[], ${rows.map((r) => r.outboxId)}::uuid[],
                  ${rows.map((r) => r.eventId)}::text[], ${rows.map((r) => r.eventType)}::text[],
                  ${rows.map((r) => r.body)}::text[], ${rows.map((r) => r.batchId)}::uuid[],
                  ${rows.map((r) => r.seq)}::int[],
                  array_replace(${rows.map((r) => r.traceparent ?? "")}::text[], '', NULL),
                  array_replace(${rows.map((r) => r.tracestate ?? "")}::text[], '', NULL),
                  ${rows.map((r) => r.ready)}::bool[],
                  ${rows.map((r) => r.first !== undefined)}::bool[],
                  ${rows.map((r) => r.first?.outcome ?? "")}::text[],
                  ${rows.map((r) => String(r.first?.delaySeconds ?? 0))}::text[],
                  ${rows.map((r) => r.first?.attempt.statusCode ?? -1)}::int[],
                  ${rows.map((r) => bounded(r.first?.attempt.error ?? null) ?? "")}::text[],
                  ${rows.map((r) => { const ms = r.first?.attempt.durationMs ?? null; return ms === null ? -1 : Math.max(0, Math.round(ms)) })}::int[],
                  ${rows.map((r) => r.first?.attempt.responseBody ?? "")}::text[],
                  ${rows.map((r) => r.underway ?? "")}::text[])
        AS t(id, subscription_id, profile_id, outbox_id, event_id, event_type, body, batch_id, seq, traceparent, tracestate, ready,
             tried, outcome, delay, code, error, duration_ms, response_body, underway)),
    inserted AS (
      INSERT INTO webhook_deliveries (id, subscription_id, profile_id, outbox_id, event_id, event_type, body, batch_id, seq,
                                      traceparent, tracestate, ready, created_at, status, attempts, next_attempt_at,
                                      first_attempt_at, last_attempt_at, last_status_code, last_error, completed_at,
                                      lease_token, lease_until)
      -- A microsecond per position: one batch's rows get increasing times, so the log lists them in
      -- order (clock_timestamp() is too coarse on PGlite).
      SELECT t.id, t.subscription_id, t.profile_id, t.outbox_id, t.event_id, t.event_type, t.body, t.batch_id, t.seq,
             t.traceparent, t.tracestate, t.ready, now() + make_interval(secs => t.seq / 1000000.0),
             COALESCE(NULLIF(t.outcome, ''), 'pending'), CASE WHEN t.tried THEN 1 ELSE 0 END,
             now() + make_interval(secs => t.delay::float8),
             CASE WHEN t.tried OR t.underway <> '' THEN now() END, CASE WHEN t.tried THEN now() END,
             NULLIF(t.code, -1), NULLIF(t.error, ''), CASE WHEN NULLIF(t.outcome, '') IS NOT NULL THEN now() END,
             NULLIF(t.underway, '')::uuid, CASE WHEN t.underway <> '' THEN now() + make_interval(secs => ${leaseSeconds}) END
      FROM t
      ON CONFLICT (subscription_id, outbox_id, profile_id) WHERE redelivery_of IS NULL DO NOTHING
      RETURNING id)
    INSERT INTO webhook_delivery_attempts (delivery_id, profile_id, subscription_id, outbox_id, attempt, attempted_at, status_code, duration_ms, error,
                                           response_body)
    -- Only the rows written here (a repeat skipped above logs nothing), when the request started.
    SELECT t.id, t.profile_id, t.subscription_id, t.outbox_id, 1, now() - make_interval(secs => COALESCE(NULLIF(t.duration_ms, -1), 0) / 1000.0),
           NULLIF(t.code, -1), NULLIF(t.duration_ms, -1), NULLIF(t.error, ''), NULLIF(t.response_body, '')
    FROM inserted i JOIN t ON t.id = i.id
    WHERE t.tried`

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class WebhookDeliveriesRepo extends Context.Service<WebhookDeliveriesRepo, {
  /**
   * Inserts the rows, each with its first attempt's result when the fan-out made it (and its attempt
   * logged), or leased for `leaseSeconds` to the attempt under way; a (subscription, event) already
   * delivered once is skipped.
   */
  readonly insert: (rows: ReadonlyArray<NewDelivery>, leaseSeconds: number) => Repo<void>
  /**
   * Claims up to `limit` due deliveries of subscriptions that are not paused, each the head of its
   * (subscription, batch) (`ready`), at most `perSubscription` per subscription less what `busy`
   * says it already has under way, oldest due first: `attempts` + 1 and a lease under `token`
   * until `leaseSeconds` from now. Each subscription's due heads are read through
   * `webhook_deliveries_ready` and the read stops at its limit: the cost follows the
   * subscriptions and the rows handed out, not the backlog, whatever the planner's statistics.
   * Without `plainHttp` (no development allow-list here), plain-http subscriptions are left to a
   * process that has one: this one would refuse them anyway.
   */
  readonly claim: (
    limit: number,
    perSubscription: number,
    busy: ReadonlyArray<Busy>,
    leaseSeconds: number,
    token: string,
    plainHttp: boolean
  ) => Repo<ReadonlyArray<DeliveryRow>>
  /**
   * Extends to `leaseSeconds` from now the lease of each row still held under its token, in one
   * statement for all the rows a process holds (its heartbeat); answers the ids renewed.
   */
  readonly renew: (held: ReadonlyArray<{ readonly id: string; readonly token: string }>, leaseSeconds: number) => Repo<ReadonlySet<string>>
  /**
   * Records the results in one statement (in a transaction of its own), each under its lease (a lost lease writes nothing for
   * that row), counts each attempt and appends it to the attempt log; the last row recorded of a
   * (subscription, batch), when it ended, makes the next row its head. Answers the rows written.
   */
  readonly settle: (results: ReadonlyArray<Settlement>) => Repo<ReadonlySet<string>>
  /**
   * Leases under `token` up to `count` rows after `after` in its batch, in order, stopping at the
   * first that may not go now (not due, or another's lease), and none unless the subscription is
   * still active with the run's URL and secret: the rows a run sends next without a claim.
   */
  readonly leaseAhead: (after: RunPosition, count: number, leaseSeconds: number, token: string) => Repo<ReadonlyArray<DeliveryRow>>
  /** Ends the leases of rows leased to a run that were not sent (their attempts were never made). */
  readonly release: (rows: ReadonlyArray<{ readonly id: string; readonly token: string }>) => Repo<void>
  /** A deleted subscription's waiting deliveries end `failed`. */
  readonly failPending: (subscriptionId: string, reason: string) => Repo<void>
  readonly list: (filter: DeliveryFilter) => Repo<ReadonlyArray<DeliveryRow>>
  readonly find: (profileId: string, id: string) => Repo<Option.Option<DeliveryRow>>
  /**
   * The attempts of `of`'s event to its subscription, the delivery and every redelivery of it, in
   * the order they were recorded, after the attempt `afterId`; `limit` + 1 rows.
   */
  readonly attempts: (of: DeliveryRow, afterId: string | null, limit: number) => Repo<ReadonlyArray<AttemptRow>>
  /** A new pending row repeating `of` (its own batch, so its head), due now. */
  readonly redeliver: (of: DeliveryRow, id: string) => Repo<DeliveryRow>
  /**
   * Each subscription's backlog (decision 0120): pending rows counted up to `countCap`, the oldest's
   * age, the successes of the last minute counted up to `rateCap`; bounded walks of
   * `webhook_deliveries_pending_age` and `webhook_deliveries_succeeded_at`, whatever the statistics.
   */
  readonly backlogs: (subscriptionIds: ReadonlyArray<string>, countCap: number, rateCap: number) => Repo<ReadonlyArray<BacklogRow>>
  /**
   * Up to `limit` of the subscriptions with pending rows, the longest waiting first, with their
   * backlogs (the metrics' leaders). One index probe per live subscription.
   */
  readonly backlogLeaders: (limit: number, countCap: number, rateCap: number) => Repo<ReadonlyArray<BacklogRow>>
  /**
   * A paused (not deleted) subscription's pending rows queued more than `maxAgeSeconds` ago end
   * `failed` with `reason`, at most `limit` of them, oldest first; rows under a live lease are left.
   * Answers each dropped row's (subscription, batch). Call `handOn` with them in the same transaction.
   */
  readonly dropPausedExpired: (maxAgeSeconds: number, reason: string, limit: number) =>
    Repo<ReadonlyArray<{ readonly subscription_id: string; readonly batch_id: string }>>
  /**
   * Of these rows to be written, the delivery batch of each outbox row already written for one of its
   * subscriptions (a fan-out that died wrote some: decision 0157). Each (subscription, outbox row)
   * probed through `webhook_deliveries_once`.
   */
  readonly writtenBatches: (rows: ReadonlyArray<NewDelivery>) => Repo<ReadonlyArray<{ readonly outbox_id: string; readonly batch_id: string }>>
  /** Makes the first pending row of each (subscription, batch) its head (`ready`), after rows of it ended out of turn. */
  readonly handOn: (batches: ReadonlyArray<{ readonly subscription_id: string; readonly batch_id: string }>) => Repo<void>
  /** Runs `effect` in one transaction (the fan-out: outbox rows claimed, deliveries written, rows published). */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/WebhookDeliveriesRepo") {
  static readonly layer = Layer.effect(WebhookDeliveriesRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const columns = (alias: string) => deliveryColumns(sql, alias)
      const many = decodeRows(DeliveryRow)
      const one = decodeFirstRow(DeliveryRow)

      const insert = (rows: ReadonlyArray<NewDelivery>, leaseSeconds: number) =>
        rows.length === 0 ? Effect.void : Effect.asVoid(insertStatement(sql, rows, leaseSeconds))

      const claim = (limit: number, perSubscription: number, busy: ReadonlyArray<Busy>, leaseSeconds: number, token: string, plainHttp: boolean) =>
        many(claimStatement(sql, { limit, perSubscription, busy, leaseSeconds, token, plainHttp }))

      // In a transaction of its own, under keyedWriteSettings: each row updated by key.
      const renew = (held: ReadonlyArray<{ readonly id: string; readonly token: string }>, leaseSeconds: number) =>
        held.length === 0 ? Effect.succeed(new Set<string>()) : Effect.map(
          keyedWrite(sql, renewStatement(sql, held, leaseSeconds)),
          (rows) => new Set(rows.map((row) => row.id))
        )

      // In a transaction of its own, under keyedWriteSettings: the next row of each batch is updated by key.
      const settle = (results: ReadonlyArray<Settlement>) =>
        results.length === 0 ? Effect.succeed<ReadonlySet<string>>(new Set()) : Effect.map(
          keyedWrite(sql, settleStatement(sql, results)),
          (rows): ReadonlySet<string> => new Set(rows.map((row) => row.ended_id))
        )

      const leaseAhead = (after: RunPosition, count: number, leaseSeconds: number, token: string) =>
        count <= 0 ? Effect.succeed([]) : Effect.map(
          many(leaseAheadStatement(sql, after, count, leaseSeconds, token)),
          // RETURNING keeps no order: the run sends them in the batch's.
          (rows) => [...rows].sort((a, b) => a.seq - b.seq)
        )

      const release = (rows: ReadonlyArray<{ readonly id: string; readonly token: string }>) =>
        rows.length === 0 ? Effect.void : Effect.asVoid(keyedWrite(sql, sql`
          UPDATE webhook_deliveries d SET lease_token = NULL, lease_until = NULL
          FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.token)}::uuid[]) AS t(id, token)
          -- By key under keyedWriteSettings, as the renewal (renewStatement): a release skipped would
          -- leave the row leased until its lease ran out, its batch waiting behind it.
          WHERE d.id = t.id AND d.lease_token = t.token AND d.status = 'pending'`))

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
                 a.status_code, a.duration_ms, a.error, a.response_body
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
               traceparent, tracestate, ready)
            VALUES (${id}, ${of.subscription_id}, ${of.profile_id}, ${of.outbox_id}, ${of.event_id}, ${of.event_type},
                    ${of.body}, ${id}, 0, ${of.id}, ${of.traceparent}, ${of.tracestate}, true)
            RETURNING ${columns("d")}`),
          (found) => Option.match(found, { onNone: () => Effect.die("the insert returned no row"), onSome: Effect.succeed })
        )

      const backlogs = (subscriptionIds: ReadonlyArray<string>, countCap: number, rateCap: number) =>
        subscriptionIds.length === 0 ? Effect.succeed([]) : decodeRows(BacklogRow)(backlogStatement(sql, subscriptionIds, countCap, rateCap))

      const backlogLeaders = (limit: number, countCap: number, rateCap: number) =>
        decodeRows(BacklogRow)(sql`
          SELECT s.id::text AS id, ${backlogColumns(sql, countCap, rateCap)}
          FROM (
            SELECT w.id, o.created_at FROM webhook_subscriptions w
            CROSS JOIN LATERAL (
              SELECT c.created_at FROM webhook_deliveries c
              WHERE c.subscription_id = w.id AND c.status = 'pending' ORDER BY c.created_at LIMIT 1) o
            WHERE w.deleted_at IS NULL
            ORDER BY o.created_at, w.id
            LIMIT ${limit}) s
          ORDER BY s.created_at, s.id`)

      const dropPausedExpired = (maxAgeSeconds: number, reason: string, limit: number) =>
        decodeRows(Schema.Struct({ subscription_id: Schema.String, batch_id: Schema.String }))(sql`
          WITH dropped AS (
            UPDATE webhook_deliveries d
            SET status = 'failed', completed_at = now(), last_error = ${bounded(reason)}, lease_token = NULL, lease_until = NULL
            FROM (
              SELECT c.id, c.profile_id FROM webhook_subscriptions s
              CROSS JOIN LATERAL (
                SELECT c.id, c.profile_id FROM webhook_deliveries c
                WHERE c.subscription_id = s.id AND c.profile_id = s.profile_id AND c.status = 'pending'
                  AND c.created_at < now() - make_interval(secs => ${maxAgeSeconds})
                  AND (c.lease_until IS NULL OR c.lease_until < now())
                ORDER BY c.created_at
                LIMIT ${limit}
                FOR UPDATE OF c SKIP LOCKED) c
              WHERE s.status = 'paused' AND s.deleted_at IS NULL
              LIMIT ${limit}) picked
            WHERE d.id = picked.id AND d.profile_id = picked.profile_id AND d.status = 'pending'
            RETURNING d.subscription_id, d.batch_id)
          SELECT DISTINCT subscription_id::text AS subscription_id, batch_id::text AS batch_id FROM dropped`)

      // Its rows updated by key: keyedWriteSettings first, for the rest of the caller's transaction.
      const handOn = (batches: ReadonlyArray<{ readonly subscription_id: string; readonly batch_id: string }>) =>
        batches.length === 0 ? Effect.void : Effect.asVoid(Effect.andThen(keyedWriteSettings(sql), sql`
          UPDATE webhook_deliveries n SET ready = true
          FROM (SELECT u.subscription_id, u.batch_id, -1 AS seq
                FROM unnest(${batches.map((b) => b.subscription_id)}::uuid[], ${batches.map((b) => b.batch_id)}::uuid[])
                  AS u(subscription_id, batch_id)) f
          ${nextInBatch(sql, "f")}
          WHERE n.id = nx.id AND n.profile_id = nx.profile_id AND n.status = 'pending' AND NOT n.ready`))

      // Under keyedWriteSettings for the rest of the caller's transaction: each pair a probe.
      const writtenBatches = (rows: ReadonlyArray<NewDelivery>) =>
        rows.length === 0 ? Effect.succeed([]) : decodeRows(Schema.Struct({ outbox_id: Schema.String, batch_id: Schema.String }))(
          Effect.andThen(keyedWriteSettings(sql), sql`
            SELECT DISTINCT x.outbox_id::text AS outbox_id, x.batch_id::text AS batch_id
            FROM unnest(${rows.map((r) => r.subscriptionId)}::uuid[], ${rows.map((r) => r.outboxId)}::uuid[], ${rows.map((r) => r.profileId)}::uuid[])
              AS t(subscription_id, outbox_id, profile_id)
            CROSS JOIN LATERAL (
              SELECT d.outbox_id, d.batch_id FROM webhook_deliveries d
              WHERE d.subscription_id = t.subscription_id AND d.outbox_id = t.outbox_id AND d.profile_id = t.profile_id
                AND d.redelivery_of IS NULL
              LIMIT 1) x`)
        )

      const mapped = atDatabaseBoundary({
        insert,
        writtenBatches,
        claim,
        renew,
        settle,
        leaseAhead,
        release,
        failPending,
        list,
        find,
        attempts,
        redeliver,
        backlogs,
        backlogLeaders,
        dropPausedExpired,
        handOn
      })
      return {
        ...mapped,
        // Each one statement, its own transaction: aborted to break a deadlock with another runner's
        // statement, it runs again as is (a result not written would mean a repeated request).
        settle: (results: ReadonlyArray<Settlement>) => retryConflicts(mapped.settle(results)),
        release: (rows: ReadonlyArray<{ readonly id: string; readonly token: string }>) => retryConflicts(mapped.release(rows)),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
