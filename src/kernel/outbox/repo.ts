/**
 * The owner of `outbox` (DESIGN.md, "Table ownership"): the rows server-side events leave for
 * delivery, their erasure, and the `outcome.recorded` replay's page (decision 0044).
 */
import { Context, Effect, Layer, Option, Schema, Struct } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { OutcomeRecordedEvent } from "../../../schema/events.ts"
import { atDatabaseBoundary, decodeRows } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"
import { currentTraceContext, type TraceContext } from "../../platform/tracing.ts"

export interface NewOutboxRow {
  readonly id: string
  readonly profileId: string
  readonly topic: string
  readonly payload: unknown
  /** The trace that queued it, when not the current one (the recorder's batch holds several requests' rows). */
  readonly trace?: TraceContext | undefined
}

/** An `outcome.recorded` row with its customer's contact (src/ingestion/events/replay). */
export const RecordedRow = Schema.Struct({
  id: Schema.String,
  created_at: Schema.String,
  payload: Schema.Struct({
    // The event's data as delivered, but the contact: the replay adds it from the columns below.
    data: Schema.Struct(Struct.omit(OutcomeRecordedEvent.fields.data.fields, ["contact"])),
    delivery: Schema.Struct({ customer_id: Schema.NullOr(Schema.String) })
  }),
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  customer_live: Schema.Boolean
})
export type RecordedRow = typeof RecordedRow.Type

/** A page of one topic's rows of a profile: oldest first, within a window, settled, after a keyset. */
export interface RecordedQuery {
  readonly profileId: string
  readonly topic: string
  /** Rows older than this many days are not answered. */
  readonly windowDays: number
  /** Rows newer than this many seconds are not answered yet. */
  readonly settleSeconds: number
  readonly after: Option.Option<{ readonly at: string; readonly id: string }>
  readonly limit: number
}

/** An unpublished row as the webhook fan-out reads it (src/webhooks/delivery), with the contact `outcome.recorded` may carry. */
export const UnpublishedRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  topic: Schema.String,
  payload: Schema.Unknown,
  created_at: Schema.String,
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  customer_live: Schema.Boolean,
  /** The W3C context of the request that wrote the row: the webhook deliveries carry it on. */
  traceparent: Schema.NullOr(Schema.String),
  tracestate: Schema.NullOr(Schema.String),
  /** The producer's enqueued batch (the transaction that wrote the row); null for rows written before it was kept. */
  batch: Schema.NullOr(Schema.String),
  /** A fan-out leased the row before and its lease ran out (decision 0157): some of its deliveries may be written. */
  retaken: Schema.Boolean
})
export type UnpublishedRow = typeof UnpublishedRow.Type

/**
 * The fan-out's read (see `claimUnpublished`), as a statement: test/api/webhooks-claim-plan.test.ts
 * checks its generic plan's cost at growing backlogs.
 */
export const unpublishedStatement = (sql: SqlClient, limit: number) => {
  // Written into the text, not bound: a generic plan costs a bound LIMIT as a tenth of the rows
  // it reads, so its estimate (and the joins above it) would grow with the backlog.
  const bound = sql.literal(String(Math.max(1, Math.floor(limit))))
  return sql`
    WITH head AS (
      SELECT id, profile_id, topic, payload, created_at, traceparent, tracestate, batch, fan_out_token FROM outbox
      -- A row another fan-out holds by its lease (decision 0157) is left to it.
      WHERE published_at IS NULL AND (fan_out_until IS NULL OR fan_out_until < now())
      ORDER BY created_at, id
      LIMIT ${bound}
      FOR UPDATE SKIP LOCKED),
    -- The rest of each of those producer batches, read per batch through outbox_unpublished_batch
    -- (in its order), never by walking the unpublished rows. One transaction wrote a batch: its
    -- rows' times are that transaction's now() plus a microsecond per position, so the batch lies
    -- within a second of its oldest row claimed, and the read prunes to that month's partition
    -- (at run time; unbounded, a planner without statistics expected rows in every month).
    rest AS (
      SELECT r.* FROM (SELECT h.batch, min(h.created_at) AS at FROM head h WHERE h.batch IS NOT NULL GROUP BY h.batch) b
      CROSS JOIN LATERAL (
        SELECT o.id, o.profile_id, o.topic, o.payload, o.created_at, o.traceparent, o.tracestate, o.batch, o.fan_out_token FROM outbox o
        WHERE o.batch = b.batch AND o.published_at IS NULL AND o.id NOT IN (SELECT h.id FROM head h)
          AND (o.fan_out_until IS NULL OR o.fan_out_until < now())
          AND o.created_at >= b.at - interval '1 second' AND o.created_at < b.at + interval '1 second'
        ORDER BY o.batch, o.created_at, o.id
        LIMIT ${bound}
        FOR UPDATE SKIP LOCKED) r),
    -- The rows as claimed, not read again by key: with id alone no longer unique (the key is
    -- (id, profile_id), migration 0064), a planner without statistics counted a share of the
    -- table per id joined back, and the estimate grew with the backlog.
    claimed AS (SELECT * FROM head UNION ALL SELECT * FROM rest)
    SELECT o.id, o.profile_id, o.topic, o.payload, ${isoTimestamp(sql, "o.created_at")} AS created_at,
           c.first_name, c.last_name,
           (SELECT value FROM customer_identifiers i WHERE i.profile_id = c.profile_id AND i.customer_id = c.id AND i.kind = 'email' AND i.removed_at IS NULL
            ORDER BY i.is_primary DESC, i.created_at LIMIT 1) AS email,
           (SELECT value FROM customer_identifiers i WHERE i.profile_id = c.profile_id AND i.customer_id = c.id AND i.kind = 'phone' AND i.removed_at IS NULL
            ORDER BY i.is_primary DESC, i.created_at LIMIT 1) AS phone,
           (c.id IS NOT NULL AND c.erased_at IS NULL) AS customer_live,
           o.traceparent, o.tracestate, o.batch::text AS batch, o.fan_out_token IS NOT NULL AS retaken
    FROM claimed o
    -- Only outcome.recorded carries a customer id (a uuid); other topics' delivery facts are not cast.
    -- A probe of the primary key per row: a plain join was planned as a scan of every customer.
    LEFT JOIN LATERAL (
      SELECT c.id, c.profile_id, c.first_name, c.last_name, c.erased_at FROM customers c
      WHERE c.id = CASE WHEN o.topic = 'outcome.recorded' THEN (o.payload->'delivery'->>'customer_id')::uuid END
        AND c.profile_id = o.profile_id
      ORDER BY c.id LIMIT 1) c ON true
    ORDER BY o.created_at, o.id`
}

/** A row's whole key, as the fan-out read it (`created_at` to the microsecond). */
export interface PublishedKey {
  readonly id: string
  readonly profile_id: string
  readonly created_at: string
}

/**
 * The fan-out's stamp (see `markPublished`; `change` and `heldBy` make it the lease, renewal and
 * stamp of a window's rows, decision 0157), as a statement: test/api/webhooks-claim-plan.test.ts
 * keeps the plan it gets on an almost empty outbox and runs it at 200,000 unpublished rows. Each
 * row is found by its whole key (LIMIT 1: a probe, never a join the planner may make a hash of
 * every unpublished row), then updated by its tuple: by id alone, the plan read all of
 * `outbox_unpublished` each call (28 to 99 ms as bench:ingest's backlog grew).
 */
export const markPublishedStatement = (sql: SqlClient, rows: ReadonlyArray<PublishedKey>, change = sql`published_at = now()`, heldBy?: string) =>
  sql<{ id: string }>`
    UPDATE outbox o SET ${change}
    FROM (
      SELECT x.toid, x.tid
      FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.profile_id)}::uuid[],
                  ${rows.map((r) => r.created_at)}::timestamptz[]) AS t(id, profile_id, created_at)
      CROSS JOIN LATERAL (
        SELECT u.tableoid AS toid, u.ctid AS tid FROM outbox u
        WHERE u.id = t.id AND u.profile_id = t.profile_id AND u.created_at = t.created_at AND u.published_at IS NULL
          AND ${heldBy === undefined ? sql`true` : sql`u.fan_out_token = ${heldBy}`}
        LIMIT 1) x) k
    WHERE o.tableoid = k.toid AND o.ctid = k.tid
    RETURNING o.id::text AS id`

/**
 * The producers' insert (see `insert` below), as a statement: test/api/outbox-insert-plan.test.ts
 * checks that its test of the profile's subscriptions stays a probe.
 *
 * A microsecond per position: the rows keep the order the producer gave them (the spec's order
 * within an enqueued batch), where equal times fell back to the order of their random ids; and the
 * fan-out's ordered read stops after the rows it takes, where a tie of a whole batch (2,000 rows of
 * a sync page) had to be read and sorted first. A row no subscription of its profile takes is
 * written published (`webhook_topic_wanted`, migration 0081): the fan-out never reads it
 * (decision 0156).
 */
export const outboxInsertStatement = (sql: SqlClient, rows: ReadonlyArray<NewOutboxRow>) =>
  sql`
    INSERT INTO outbox (id, profile_id, topic, payload, traceparent, tracestate, created_at, published_at)
    SELECT t.id, t.profile_id, t.topic, t.payload, t.traceparent, t.tracestate,
           now() + make_interval(secs => (t.n - 1) / 1000000.0),
           CASE WHEN webhook_topic_wanted(t.profile_id, t.topic) THEN NULL ELSE now() END
    FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.profileId)}::uuid[],
                ${rows.map((r) => r.topic)}::text[], ${rows.map((r) => JSON.stringify(r.payload))}::jsonb[],
                -- '' for none: the driver cannot type an array holding only nulls.
                array_replace(${rows.map((r) => r.trace?.traceparent ?? "")}::text[], '', NULL),
                array_replace(${rows.map((r) => r.trace?.tracestate ?? "")}::text[], '', NULL))
      WITH ORDINALITY AS t(id, profile_id, topic, payload, traceparent, tracestate, n)`

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class OutboxRepo extends Context.Service<OutboxRepo, {
  /**
   * Inserts the rows (one statement), in the caller's transaction; a row no live subscription of its
   * profile takes is written published (the fan-out never reads it).
   */
  readonly insert: (rows: ReadonlyArray<NewOutboxRow>) => Repo<void>
  /**
   * Erasure: `outcome.recorded` rows of these customers, delivered or not (the replay answers them
   * too), lose the customer key and the customer to open.
   */
  readonly forgetCustomers: (customerIds: ReadonlyArray<string>) => Repo<void>
  /** The page of rows (one more than `limit`), each with its customer's name, primary email and phone and whether it is live. */
  readonly recorded: (query: RecordedQuery) => Repo<ReadonlyArray<RecordedRow>>
  /**
   * The oldest unpublished rows (up to `limit`, in order) and the rest of the producer batches
   * they belong to (up to `limit` more), locked for the caller's transaction, which must be open:
   * one fan-out at a time (a transaction-scoped advisory lock; another caller meanwhile gets no
   * rows), so a producer batch of up to `limit` rows is never split between two fan-outs.
   */
  readonly claimUnpublished: (limit: number) => Repo<ReadonlyArray<UnpublishedRow>>
  /** Stamps `published_at`: the rows were handed to the webhook delivery (in the caller's transaction). */
  readonly markPublished: (rows: ReadonlyArray<PublishedKey>) => Repo<void>
  /**
   * Leases the claimed rows to a fan-out under `token` for `leaseSeconds` (decision 0157): no other
   * fan-out claims them until it runs out, and the caller's transaction may end meanwhile.
   */
  readonly leaseForFanOut: (rows: ReadonlyArray<PublishedKey>, token: string, leaseSeconds: number) => Repo<void>
  /** Extends the lease of the rows still leased under `token`; answers the ids it renewed. */
  readonly renewFanOut: (rows: ReadonlyArray<PublishedKey>, token: string, leaseSeconds: number) => Repo<ReadonlyArray<string>>
  /** Stamps `published_at` on the rows still leased under `token`; answers the ids it stamped. */
  readonly publishLeased: (rows: ReadonlyArray<PublishedKey>, token: string) => Repo<ReadonlyArray<string>>
}>()("svc/OutboxRepo") {
  static readonly layer = Layer.effect(OutboxRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      // Each row keeps the trace that queued it (its own, or the current one) for the delivery's span to link to (decision 0083).
      const insert = (rows: ReadonlyArray<NewOutboxRow>) =>
        rows.length === 0 ? Effect.void : Effect.flatMap(currentTraceContext, (current) =>
          Effect.asVoid(outboxInsertStatement(sql, rows.map((r) => ({ ...r, trace: r.trace ?? Option.getOrUndefined(current) })))))

      const forgetCustomers = (ids: ReadonlyArray<string>) =>
        Effect.asVoid(sql`
          UPDATE outbox
          SET payload = jsonb_set(jsonb_set(payload, '{data,customer_key}', 'null'::jsonb), '{delivery,customer_id}', 'null'::jsonb)
          WHERE payload->'delivery'->>'customer_id' = ANY(${ids}::text[])`)

      const recordedRows = decodeRows(RecordedRow)
      const recorded = ({ after, limit, profileId, settleSeconds, topic, windowDays }: RecordedQuery) => {
        const start = Option.match(after, {
          onNone: () => sql`o.created_at >= now() - make_interval(days => ${windowDays})`,
          onSome: (keyset) =>
            sql`o.created_at >= now() - make_interval(days => ${windowDays})
                AND (o.created_at, o.id) > (${keyset.at}::timestamptz, ${keyset.id}::uuid)`
        })
        return recordedRows(sql`
          SELECT o.id, ${isoTimestamp(sql, "o.created_at")} AS created_at, o.payload,
                 c.first_name, c.last_name,
                 (SELECT value FROM customer_identifiers i WHERE i.profile_id = c.profile_id AND i.customer_id = c.id AND i.kind = 'email' AND i.removed_at IS NULL
                  ORDER BY i.is_primary DESC, i.created_at LIMIT 1) AS email,
                 (SELECT value FROM customer_identifiers i WHERE i.profile_id = c.profile_id AND i.customer_id = c.id AND i.kind = 'phone' AND i.removed_at IS NULL
                  ORDER BY i.is_primary DESC, i.created_at LIMIT 1) AS phone,
                 (c.id IS NOT NULL AND c.erased_at IS NULL) AS customer_live
          FROM outbox o
          LEFT JOIN customers c ON c.id = (o.payload->'delivery'->>'customer_id')::uuid
          WHERE o.profile_id = ${profileId} AND o.topic = ${topic}
            AND o.created_at < now() - make_interval(secs => ${settleSeconds})
            AND ${start}
          ORDER BY o.created_at, o.id
          LIMIT ${limit + 1}`)
      }

      const unpublishedRows = decodeRows(UnpublishedRow)
      const claimUnpublished = (limit: number) =>
        Effect.flatMap(
          sql<{ held: boolean }>`SELECT pg_try_advisory_xact_lock(hashtextextended('outbox_fan_out', 0)) AS held`,
          ([lock]) => lock?.held !== true ? Effect.succeed([]) : unpublishedRows(unpublishedStatement(sql, limit))
        )

      const markPublished = (rows: ReadonlyArray<PublishedKey>) =>
        rows.length === 0 ? Effect.void : Effect.asVoid(markPublishedStatement(sql, rows))

      const leaseForFanOut = (rows: ReadonlyArray<PublishedKey>, token: string, leaseSeconds: number) =>
        rows.length === 0 ? Effect.void : Effect.asVoid(markPublishedStatement(
          sql,
          rows,
          sql`fan_out_token = ${token}, fan_out_until = now() + make_interval(secs => ${leaseSeconds})`
        ))

      const renewFanOut = (rows: ReadonlyArray<PublishedKey>, token: string, leaseSeconds: number) =>
        rows.length === 0 ? Effect.succeed([]) : Effect.map(
          markPublishedStatement(sql, rows, sql`fan_out_until = now() + make_interval(secs => ${leaseSeconds})`, token),
          (renewed) => renewed.map((row) => row.id)
        )

      const publishLeased = (rows: ReadonlyArray<PublishedKey>, token: string) =>
        rows.length === 0 ? Effect.succeed([]) : Effect.map(
          markPublishedStatement(sql, rows, sql`published_at = now(), fan_out_until = NULL`, token),
          (stamped) => stamped.map((row) => row.id)
        )

      return atDatabaseBoundary({ insert, forgetCustomers, recorded, claimUnpublished, markPublished, leaseForFanOut, renewFanOut, publishLeased })
    })
  )
}
