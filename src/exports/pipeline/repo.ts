/**
 * The owner of `conversion_exports` (the export queue: one row per (outcome, destination), its
 * stable dedup event id and its lease) and `export_deliveries` (the ledger: one row per attempt
 * decision, written in the same transaction as the decision, fenced by the lease token).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { PrivacyConfig } from "../../../schema/exports.ts"
import { PrivacyMode } from "../../../schema/tenancy.ts"
import { conversionOfEvent } from "../../attribution/conversions/probe.ts"
import { BacklogRow } from "../../platform/backlog.ts"
import { keyedWrite, keyedWriteSettings } from "../../platform/claim-settings.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, nullableColumn } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

/** A timestamp to the microsecond, in UTC (a JavaScript Date keeps only milliseconds). */
const microseconds = (expression: string) => `to_char((${expression}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

/**
 * The worker's claim (see `claim`), as a statement: test/api/queue-claim-plans.test.ts checks its
 * generic plan's cost at growing backlogs.
 */
export const claimStatement = (sql: SqlClient, limit: number, leaseSeconds: number, token: string) =>
  sql`
    UPDATE conversion_exports x
    SET lease_until = now() + make_interval(secs => ${leaseSeconds}), lease_token = ${token}
    -- The whole key (id, profile_id): the planner counts one row per pair, as it did per id.
    WHERE (x.id, x.profile_id) IN (
      SELECT id, profile_id FROM conversion_exports
      WHERE status IN ('pending', 'held') AND next_attempt_at <= now() AND (lease_until IS NULL OR lease_until < now())
        -- Rows from before the pipeline (no destination) are not the worker's to send.
        AND destination_id IS NOT NULL AND event_id IS NOT NULL
      -- The limit is written into the text, not bound: a generic plan costs a bound LIMIT as a tenth
      -- of the rows it reads, so its cost would grow with the backlog (issue 34).
      ORDER BY next_attempt_at LIMIT ${sql.literal(String(Math.max(0, Math.floor(limit))))}
      FOR UPDATE SKIP LOCKED)
    RETURNING x.id, x.profile_id, x.outcome_event_id, x.destination_id, x.event_id, x.attempts, x.status, x.lease_token::text AS lease_token`

export const ClaimedExport = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  outcome_event_id: Schema.String,
  destination_id: Schema.String,
  event_id: Schema.String,
  attempts: Schema.Int,
  status: Schema.String,
  lease_token: Schema.String
})
export type ClaimedExport = typeof ClaimedExport.Type

/** Everything one export decision reads, in one statement. */
export const ExportFacts = Schema.Struct({
  event_name: Schema.String,
  conversion_key: Schema.String,
  occurred_epoch: Schema.Number,
  value_amount: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  action_source: Schema.NullOr(Schema.String),
  click_ids: Schema.Record(Schema.String, Schema.String),
  external_id: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  retracted: Schema.Boolean,
  overrides: Schema.Record(Schema.String, Schema.NullOr(Schema.String)),
  rule_destination_ids: Schema.NullOr(Schema.Array(Schema.String)),
  kind: Schema.Literals(["adplatform_capi", "adplatform_capi_messaging"]),
  connection_id: Schema.String,
  dataset_id: Schema.String,
  clean_dataset: Schema.Boolean,
  destination_live: Schema.Boolean,
  privacy_mode: PrivacyMode,
  platform_safe_target: Schema.Literals(["existing", "clean"]),
  privacy_config: Schema.NullOr(PrivacyConfig),
  website_destination: Schema.Boolean,
  messaging_destination: Schema.Boolean,
  clean_destination: Schema.Boolean,
  attribution_enabled: Schema.Boolean
})
export type ExportFacts = typeof ExportFacts.Type

export type Decision = "delivered" | "retrying" | "failed" | "held" | "skipped" | "suppressed"

/** Where a rule's recent sweep stands: the last conversion it read, in `conversions_export_cursor` order. */
export interface SweepMark {
  readonly ruleId: string
  /** `created_at` to the microsecond, as the database wrote it. */
  readonly createdAt: string
  readonly id: string
}

export interface LedgerEntry {
  readonly decision: Decision
  readonly actionSource: string | null
  readonly skipReason: string | null
  readonly routing: string | null
  readonly eventName: string | null
  readonly providerStatus: number | null
  readonly errorCode: string | null
}

export interface TestLedgerEntry extends LedgerEntry {
  readonly profileId: string
  readonly destinationId: string
  readonly eventId: string
}

export const DeliveryRow = Schema.Struct({
  id: Schema.String,
  destination_id: Schema.NullOr(Schema.String),
  outcome_event_id: Schema.NullOr(Schema.String),
  event_id: Schema.NullOr(Schema.String),
  attempt: Schema.Int,
  decision: Schema.Literals(["delivered", "retrying", "failed", "held", "skipped", "suppressed"]),
  action_source: Schema.NullOr(Schema.String),
  skip_reason: Schema.NullOr(Schema.String),
  routing: Schema.NullOr(Schema.String),
  event_name: Schema.NullOr(Schema.String),
  provider_status: Schema.NullOr(Schema.Int),
  error_code: Schema.NullOr(Schema.String),
  is_test: Schema.Boolean,
  created_at: Schema.String
})
export type DeliveryRow = typeof DeliveryRow.Type

export interface DeliveriesFilter {
  readonly profileId: string
  readonly destinationId: string | null
  readonly skipReason: string | null
  readonly limit: number
  readonly after: Option.Option<{ readonly createdAt: string; readonly id: string }>
}

/** Whether the attribution add-on is on for profile `p`, or a person created the profile (the sync worker's test too). */
const attributionOnText = `(p.provisioned_by_app_id IS NULL OR COALESCE((
        SELECT en.enabled FROM entitlements en WHERE en.profile_id = p.id AND en.feature = 'svc_attribution'), false))`

// The exports of a batch of (rule, conversion) pairs, once per live destination, as both sweeps
// queue them. A retraction locks its outcome row FOR UPDATE; the sweep waits for it and then
// sees the tombstone (READ COMMITTED re-checks a locked row), so a racing retraction is skipped
// instead of queued, and an outcome the sweep queued first is refused its retraction (409).
export const queuedFrom = (sql: SqlClient, batch: string) =>
  sql.literal(`
        INSERT INTO conversion_exports (id, profile_id, outcome_event_id, destination, destination_id, rule_id, event_id, status)
        SELECT md5(c.outcome_event_id::text || ':' || d.id::text)::uuid, c.profile_id, c.outcome_event_id, d.kind, d.id, r.id,
               'svc_' || md5(c.outcome_event_id::text || ':' || d.id::text), 'pending'
        FROM ${batch} b
        JOIN export_rules r ON r.id = b.rule_id
        -- By the whole key: by (id, profile_id) alone a plan costed on young statistics read every
        -- row of the profile's month through another index, for each row of the batch (bench:export).
        JOIN conversions c ON c.id = b.id AND c.profile_id = r.profile_id AND c.occurred_at = b.occurred_at AND c.attribution_eligible
        JOIN outcome_events e ON e.id = c.outcome_event_id AND e.profile_id = c.profile_id AND e.occurred_at = c.occurred_at
          AND e.retracted_at IS NULL
        JOIN export_destinations d ON d.profile_id = r.profile_id AND d.deleted_at IS NULL AND d.status = 'active'
          AND (r.destination_ids IS NULL OR d.id = ANY (r.destination_ids))
        JOIN profiles p ON p.id = r.profile_id
        WHERE r.enabled AND ${attributionOnText} AND c.created_at >= d.created_at
        FOR KEY SHARE OF e
        ON CONFLICT (outcome_event_id, destination_id, profile_id) DO NOTHING
        RETURNING id`)

/**
 * The sweep that queues what arrived since each rule's mark (see `enqueue` below), as a statement:
 * test/api/queue-claim-plans.test.ts runs a plan of it kept from an empty queue at 200,000 exports.
 * `horizon` bounds the next mark (the oldest transaction running before the sweep).
 */
export const enqueueStatement = (
  sql: SqlClient,
  after: ReadonlyArray<SweepMark>,
  windowSeconds: number,
  limitPerRule: number,
  horizon: string
) =>
  sql<{ readonly rule_id: string }>`
            WITH marks AS (
              SELECT k.rule_id, k.created_at, k.id
              FROM unnest(${after.map((m) => m.ruleId)}::uuid[], ${after.map((m) => m.createdAt)}::timestamptz[], ${after.map((m) => m.id)}::uuid[])
                AS k(rule_id, created_at, id)),
            batch AS (
              SELECT r.id AS rule_id, r.profile_id, c.id, c.created_at, c.occurred_at
              FROM export_rules r
              LEFT JOIN marks k ON k.rule_id = r.id
              -- Through conversions_export_cursor from the mark on (one row comparison, the window's
              -- start folded in: a separate range on created_at let a plan built without statistics
              -- read the whole window through conversions_export_sweep instead).
              CROSS JOIN LATERAL (
                SELECT c.id, c.created_at, c.occurred_at FROM conversions c
                WHERE c.profile_id = r.profile_id AND c.conversion_key = r.conversion_key AND c.created_at >= r.created_at
                  AND (c.created_at, c.id) > (
                    CASE WHEN k.created_at > now() - make_interval(secs => ${windowSeconds}) THEN k.created_at
                         ELSE now() - make_interval(secs => ${windowSeconds}) END,
                    CASE WHEN k.created_at > now() - make_interval(secs => ${windowSeconds}) THEN k.id
                         ELSE '00000000-0000-0000-0000-000000000000'::uuid END)
                  -- A probe per row through conversion_exports_pair: OFFSET 0 keeps it a subplan, since as an
                  -- anti-join a plan kept from when the queue was empty read the whole table into memory
                  -- for each sweep (bench:export, a generic plan made on a near-empty conversion_exports).
                  AND NOT EXISTS (
                    SELECT 1 FROM conversion_exports x
                    WHERE x.outcome_event_id = c.outcome_event_id AND x.profile_id = c.profile_id AND x.rule_id = r.id
                    OFFSET 0)
                ORDER BY c.created_at, c.id
                LIMIT ${limitPerRule}) c
              WHERE r.enabled
            ),
            queued AS (${queuedFrom(sql, "batch")})
            SELECT DISTINCT ON (b.rule_id) b.rule_id::text AS rule_id,
                   ${sql.literal(microseconds("CASE WHEN h.at < b.created_at THEN h.at ELSE b.created_at END"))} AS created_at,
                   (CASE WHEN h.at < b.created_at THEN '00000000-0000-0000-0000-000000000000'::uuid ELSE b.id END)::text AS id,
                   (SELECT count(*) FROM queued)::int AS queued
            FROM batch b CROSS JOIN (SELECT ${horizon}::timestamptz AS at) h ORDER BY b.rule_id, b.created_at DESC, b.id DESC`

/**
 * Everything the decisions of a batch of exports read, in one statement (see `facts` below).
 * Every row is found by its whole key, profile included (decision 0137): the primary keys are
 * (id, profile_id) since migration 0064, and a lookup by id alone is costed without statistics as
 * half a percent of the table per id, which made this a merge join over every outcome of every
 * profile. test/api/queue-claim-plans.test.ts holds its cost per export flat at growing tables.
 */
export const factsStatement = (sql: SqlClient, jobs: ReadonlyArray<Pick<ClaimedExport, "id" | "profile_id">>) =>
  sql<{ export_id: string }>`
    SELECT x.id::text AS export_id, e.event_name, c.conversion_key, extract(epoch FROM e.occurred_at)::float8 AS occurred_epoch,
           c.value_amount::text AS value_amount, c.currency, e.action_source, e.click_ids,
           cu.customer_key AS external_id,
           -- The contact look-ups name the profile: without it, a plan built without statistics walked
           -- customer_identifiers_contact (profile, kind, customer) across every profile's identifiers.
           (SELECT i.value FROM customer_identifiers i WHERE i.profile_id = x.profile_id AND i.customer_id = e.customer_id AND i.kind = 'email' AND i.removed_at IS NULL
            ORDER BY i.is_primary DESC, i.created_at LIMIT 1) AS email,
           (SELECT i.value FROM customer_identifiers i WHERE i.profile_id = x.profile_id AND i.customer_id = e.customer_id AND i.kind = 'phone' AND i.removed_at IS NULL
            ORDER BY i.is_primary DESC, i.created_at LIMIT 1) AS phone,
           e.retracted_at IS NOT NULL AS retracted,
           r.platform_event_name_overrides AS overrides, r.destination_ids::text[] AS rule_destination_ids,
           d.kind, d.connection_id, d.dataset_id, d.clean_dataset, (d.deleted_at IS NULL AND d.status = 'active') AS destination_live,
           p.privacy_mode, p.platform_safe_target, s.privacy_config,
           EXISTS (SELECT 1 FROM export_destinations o WHERE o.profile_id = x.profile_id AND o.kind = 'adplatform_capi'
                   AND o.deleted_at IS NULL AND o.status = 'active'
                   AND (r.destination_ids IS NULL OR o.id = ANY (r.destination_ids))) AS website_destination,
           EXISTS (SELECT 1 FROM export_destinations o WHERE o.profile_id = x.profile_id AND o.kind = 'adplatform_capi_messaging'
                   AND o.deleted_at IS NULL AND o.status = 'active'
                   AND (r.destination_ids IS NULL OR o.id = ANY (r.destination_ids))) AS messaging_destination,
           EXISTS (SELECT 1 FROM export_destinations o WHERE o.profile_id = x.profile_id AND o.clean_dataset
                   AND o.deleted_at IS NULL AND o.status = 'active') AS clean_destination,
           ${sql.literal(attributionOnText)} AS attribution_enabled
    FROM unnest(${jobs.map((job) => job.id)}::uuid[], ${jobs.map((job) => job.profile_id)}::uuid[]) AS k(id, profile_id)
    -- One probe of a key per row and table, ordered by the key so that no plan reads a table
    -- whole, not even one costed while the tables were empty and kept since.
    CROSS JOIN LATERAL (SELECT * FROM conversion_exports x WHERE x.id = k.id AND x.profile_id = k.profile_id ORDER BY x.id LIMIT 1) x
    -- The export names its event without a time: the event's key row gives the month, so each
    -- probe below reads one partition (decision 0146).
    CROSS JOIN LATERAL (
      SELECT * FROM outcome_keys ok WHERE ok.outcome_event_id = x.outcome_event_id AND ok.profile_id = x.profile_id
      ORDER BY ok.outcome_event_id LIMIT 1) ok
    CROSS JOIN LATERAL (
      SELECT * FROM outcome_events e WHERE e.id = ok.outcome_event_id AND e.profile_id = ok.profile_id AND e.occurred_at = ok.occurred_at
      ORDER BY e.id LIMIT 1) e
    -- By the one-conversion-per-outcome key only (conversionOfEvent): a plan made on an empty month took
    -- (profile_id, occurred_at, id) and read every conversion of the profile at that instant (2.8 s at
    -- 200,000 imported at one time, test/api/queue-claim-plans.test.ts).
    CROSS JOIN LATERAL (
      SELECT * FROM conversions c
      WHERE ${conversionOfEvent(sql, "c", { id: sql`ok.outcome_event_id`, profile: sql`ok.profile_id`, at: sql`ok.occurred_at` })}
      ORDER BY c.outcome_event_id LIMIT 1) c
    CROSS JOIN LATERAL (SELECT * FROM export_rules r WHERE r.id = x.rule_id AND r.profile_id = x.profile_id ORDER BY r.id LIMIT 1) r
    CROSS JOIN LATERAL (
      SELECT * FROM export_destinations d WHERE d.id = x.destination_id AND d.profile_id = x.profile_id ORDER BY d.id LIMIT 1) d
    CROSS JOIN LATERAL (SELECT * FROM profiles p WHERE p.id = x.profile_id ORDER BY p.id LIMIT 1) p
    LEFT JOIN LATERAL (
      SELECT cu.customer_key FROM customers cu WHERE cu.id = e.customer_id AND cu.profile_id = e.profile_id ORDER BY cu.id LIMIT 1) cu ON true
    LEFT JOIN LATERAL (
      SELECT s.privacy_config FROM conversion_sync_settings s WHERE s.profile_id = x.profile_id ORDER BY s.profile_id LIMIT 1) s ON true`

/**
 * `delivered` for the exports of one acknowledged call whose lease is still the caller's (see
 * `deliverMany` below), each found by its whole key (decision 0137); answers their ids.
 */
export const deliverStatement = (sql: SqlClient, jobs: ReadonlyArray<Pick<ClaimedExport, "id" | "profile_id" | "lease_token">>) =>
  sql<{ id: string }>`
    UPDATE conversion_exports x
    SET status = 'delivered', attempts = x.attempts + 1, lease_until = NULL, lease_token = NULL, updated_at = now(),
        next_attempt_at = now()
    FROM unnest(${jobs.map((job) => job.id)}::uuid[], ${jobs.map((job) => job.profile_id)}::uuid[], ${jobs.map((job) => job.lease_token)}::uuid[])
      AS t(id, profile_id, token)
    WHERE x.id = t.id AND x.profile_id = t.profile_id AND x.lease_token = t.token
    RETURNING x.id::text AS id`

/**
 * The batch heartbeat's renewal (see `renew` below), as a statement: test/api/lease-takeover.test.ts
 * checks that its generic plan, under `keyedWriteSettings`, reads through the primary key.
 */
export const renewStatement = (sql: SqlClient, jobs: ReadonlyArray<Pick<ClaimedExport, "id" | "lease_token">>, leaseSeconds: number) =>
  sql<{ id: string }>`
    UPDATE conversion_exports x SET lease_until = now() + make_interval(secs => ${leaseSeconds})
    FROM unnest(${jobs.map((job) => job.id)}::uuid[], ${jobs.map((job) => job.lease_token)}::uuid[]) AS t(id, token)
    -- By key under keyedWriteSettings, as the webhook heartbeat's renewal (decision 0153): a row
    -- another transaction changed meanwhile is rechecked and renewed, not skipped as lost.
    WHERE x.id = t.id AND x.lease_token = t.token
    RETURNING x.id`

export class ExportsRepo extends Context.Service<ExportsRepo, {
  /**
   * Queues every attribution-eligible conversion a live rule reaches, once per live destination,
   * recorded since both the rule and the destination existed: per rule, up to `limitPerRule`
   * conversions of the last `windowSeconds` past the rule's mark in `after` (where it has one).
   * Answers how many exports were queued and each rule's new mark (the last conversion read), for
   * the next call: each call reads only what arrived since, not the whole window again (at 1,000
   * conversions a second, re-reading a 10-minute window each poll was a quarter of the database's
   * time, issue 34). A conversion committed after the mark moved past its `created_at` is left to
   * the complete sweep. Idempotent: the (outcome, destination) pair is unique and its ids derive from it.
   */
  readonly enqueue: (after: ReadonlyArray<SweepMark>, windowSeconds: number, limitPerRule: number) =>
    Repo<{ readonly queued: number; readonly marks: ReadonlyArray<SweepMark> }>
  /**
   * The complete sweep (decision 0094): per rule, up to `limitPerRule` conversions past the rule's
   * durable cursor and older than `lagSeconds` are queued like `enqueue` does, and the cursor moves
   * past them in the same statement. Answers how many exports were queued and how many conversions
   * were read (a full batch means more may wait).
   */
  readonly enqueueFromCursor: (lagSeconds: number, limitPerRule: number) => Repo<{ readonly queued: number; readonly scanned: number; readonly full: boolean }>
  /**
   * A decision that could not be made (a defect: an undecodable row, a bug) counts an attempt and
   * frees the lease until `retryInSeconds`, without a ledger row; answers whether the lease was ours.
   */
  readonly release: (claimed: ClaimedExport, retryInSeconds: number) => Repo<boolean>
  /** Leases up to `limit` due exports (pending, or held and due for a recheck). */
  readonly claim: (limit: number, leaseSeconds: number) => Repo<ReadonlyArray<ClaimedExport>>
  /**
   * Extends the lease of the claimed exports still held under their token to `leaseSeconds` from
   * now, in one statement (the batch's heartbeat); answers how many were.
   */
  readonly renew: (jobs: ReadonlyArray<ClaimedExport>, leaseSeconds: number) => Repo<number>
  /**
   * The facts of each export, by its id, in one statement (an export whose event is gone has none),
   * each decoded on its own: a row that does not decode fails that export only (it dies when run).
   */
  readonly facts: (exports: ReadonlyArray<Pick<ClaimedExport, "id" | "profile_id">>) => Repo<ReadonlyMap<string, Effect.Effect<ExportFacts>>>
  /**
   * Writes the decision and its ledger row (none for a hold that was already held), only while
   * the lease token is ours; answers whether it was. `retryInSeconds` is the next attempt of a
   * `retrying` or `held` decision.
   */
  readonly decide: (claimed: ClaimedExport, entry: LedgerEntry, retryInSeconds: number | null, countsAttempt: boolean) => Repo<boolean>
  /**
   * `delivered` for every export of one acknowledged call, each with its ledger row, in one
   * transaction; only exports whose lease token is still ours. Answers how many were.
   */
  readonly deliverMany: (delivered: ReadonlyArray<{ readonly claimed: ClaimedExport; readonly entry: LedgerEntry }>) => Repo<number>
  /** A test event's ledger row (no export: test events never block a retraction). */
  readonly recordTest: (entry: TestLedgerEntry) => Repo<void>
  readonly deliveries: (filter: DeliveriesFilter) => Repo<ReadonlyArray<DeliveryRow>>
  /**
   * Each destination's backlog (decision 0120): exports waiting (`pending` or `held`) counted up to
   * `countCap`, the oldest's age, the last minute's deliveries (tests aside) counted up to
   * `rateCap`; bounded walks of `conversion_exports_waiting_age` and `export_deliveries_delivered_at`.
   */
  readonly backlogs: (destinationIds: ReadonlyArray<string>, countCap: number, rateCap: number) => Repo<ReadonlyArray<BacklogRow>>
  /** Up to `limit` live destinations with exports waiting, the longest waiting first, with their backlogs (the metrics). */
  readonly backlogLeaders: (limit: number, countCap: number, rateCap: number) => Repo<ReadonlyArray<BacklogRow>>
}>()("svc/ExportsRepo") {
  static readonly layer = Layer.effect(ExportsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const claimed = decodeRows(ClaimedExport)
      const decodeFacts = Schema.decodeUnknownExit(ExportFacts)
      const deliveryRows = decodeRows(DeliveryRow)

      const marksRead = decodeRows(Schema.Struct({ rule_id: Schema.String, created_at: Schema.String, id: Schema.String, queued: Schema.Int }))
      // A conversion's created_at is stamped inside its transaction: one the sweep cannot see yet
      // is no older than the oldest transaction running when the sweep's snapshot was taken. Read in
      // a statement of its own before the sweep's (a transaction that ends while the sweep runs is
      // no longer listed then), it bounds the next mark: the next call reads such a conversion once
      // it has committed, and what is queued by then is passed over.
      const horizon = Effect.map(
        sql<{ at: string }>`
          SELECT ${sql.literal(microseconds("COALESCE(min(a.xact_start), now()) - interval '1 microsecond'"))} AS at
          FROM pg_stat_activity a WHERE a.datname = current_database() AND a.xact_start IS NOT NULL`,
        (rows) => rows[0]?.at ?? "-infinity"
      )
      const enqueue = (after: ReadonlyArray<SweepMark>, windowSeconds: number, limitPerRule: number) =>
        Effect.flatMap(horizon, (h) => Effect.map(
          marksRead(enqueueStatement(sql, after, windowSeconds, limitPerRule, h)),
          (rows) => {
            // Rules that read nothing keep their marks; a mark may move back to the horizon.
            const moved = new Map(rows.map((row) => [row.rule_id, { ruleId: row.rule_id, createdAt: row.created_at, id: row.id }] as const))
            const kept = after.filter((mark) => !moved.has(mark.ruleId))
            return { queued: rows[0]?.queued ?? 0, marks: [...kept, ...moved.values()] }
          }
        ))

      const cursorCounts = decodeFirstRow(Schema.Struct({ queued: Schema.Int, scanned: Schema.Int, full: Schema.Boolean }))
      const enqueueFromCursor = (lagSeconds: number, limitPerRule: number) =>
        Effect.map(
          cursorCounts(sql`
            WITH batch AS (
              SELECT r.id AS rule_id, r.profile_id, c.id, c.created_at, c.occurred_at
              FROM export_rules r
              LEFT JOIN export_sweep_cursors k ON k.rule_id = r.id AND k.profile_id = r.profile_id
              CROSS JOIN LATERAL (
                SELECT c.id, c.created_at, c.occurred_at FROM conversions c
                WHERE c.profile_id = r.profile_id AND c.conversion_key = r.conversion_key AND c.created_at >= r.created_at
                  -- The lag leaves room for a transaction that stamped created_at and has not committed yet.
                  AND c.created_at < now() - make_interval(secs => ${lagSeconds})
                  AND (k.rule_id IS NULL OR (c.created_at, c.id) > (k.after_created_at, k.after_id))
                ORDER BY c.created_at, c.id
                LIMIT ${limitPerRule}) c
            ),
            queued AS (${queuedFrom(sql, "batch")}),
            moved AS (
              INSERT INTO export_sweep_cursors (rule_id, profile_id, after_created_at, after_id)
              SELECT DISTINCT ON (rule_id) rule_id, profile_id, created_at, id FROM batch ORDER BY rule_id, created_at DESC, id DESC
              ON CONFLICT (rule_id, profile_id) DO UPDATE SET after_created_at = excluded.after_created_at, after_id = excluded.after_id, updated_at = now()
                -- A runner that read an older cursor never moves it back.
                WHERE (export_sweep_cursors.after_created_at, export_sweep_cursors.after_id) < (excluded.after_created_at, excluded.after_id)
              RETURNING rule_id
            )
            SELECT (SELECT count(*) FROM queued)::int AS queued, (SELECT count(*) FROM batch)::int AS scanned,
                   COALESCE((SELECT max(n) FROM (SELECT count(*) AS n FROM batch GROUP BY rule_id) g), 0) >= ${limitPerRule} AS full`),
          Option.match({ onNone: () => ({ queued: 0, scanned: 0, full: false }), onSome: (row) => row })
        )

      const release = (job: ClaimedExport, retryInSeconds: number) =>
        Effect.map(
          sql`
            UPDATE conversion_exports
            SET attempts = attempts + 1, lease_until = NULL, lease_token = NULL, updated_at = now(),
                next_attempt_at = now() + make_interval(secs => ${retryInSeconds})
            WHERE id = ${job.id} AND profile_id = ${job.profile_id} AND lease_token = ${job.lease_token}::uuid
            RETURNING id`,
          (rows) => rows.length > 0
        )

      const claim = (limit: number, leaseSeconds: number) => claimed(claimStatement(sql, limit, leaseSeconds, crypto.randomUUID()))

      const renew = (jobs: ReadonlyArray<ClaimedExport>, leaseSeconds: number) =>
        jobs.length === 0 ? Effect.succeed(0) : Effect.map(
          keyedWrite(sql, renewStatement(sql, jobs, leaseSeconds)),
          (rows) => rows.length
        )

      const facts = (jobs: ReadonlyArray<Pick<ClaimedExport, "id" | "profile_id">>) =>
        jobs.length === 0 ? Effect.succeed(new Map<string, Effect.Effect<ExportFacts>>()) : Effect.map(
          factsStatement(sql, jobs),
          (rows) => new Map(rows.map((row) => [row.export_id, Effect.orDie(decodeFacts(row))] as const))
        )

      const statusOf = (decision: Decision) =>
        decision === "retrying" ? "pending" : decision

      const decide = (job: ClaimedExport, entry: LedgerEntry, retryInSeconds: number | null, countsAttempt: boolean) =>
        Effect.gen(function*() {
          const attempts = countsAttempt ? job.attempts + 1 : job.attempts
          const updated = yield* sql`
            UPDATE conversion_exports
            SET status = ${statusOf(entry.decision)}, attempts = ${attempts}, lease_until = NULL, lease_token = NULL, updated_at = now(),
                next_attempt_at = now() + make_interval(secs => ${retryInSeconds ?? 0})
            WHERE id = ${job.id} AND profile_id = ${job.profile_id} AND lease_token = ${job.lease_token}::uuid
            RETURNING id`
          if (updated.length === 0) return false
          // A recheck that finds the export still held is not a new decision.
          if (entry.decision === "held" && job.status === "held") return true
          yield* sql`
            INSERT INTO export_deliveries (id, profile_id, export_id, destination_id, outcome_event_id, event_id, attempt, decision,
                                           action_source, skip_reason, routing, event_name, provider_status, error_code)
            VALUES (${crypto.randomUUID()}, ${job.profile_id}, ${job.id}, ${job.destination_id}, ${job.outcome_event_id}, ${job.event_id},
                    ${attempts}, ${entry.decision}, ${entry.actionSource}, ${entry.skipReason}, ${entry.routing}, ${entry.eventName},
                    ${entry.providerStatus}, ${entry.errorCode})`
          return true
        }).pipe(sql.withTransaction)

      const deliverMany = (delivered: ReadonlyArray<{ readonly claimed: ClaimedExport; readonly entry: LedgerEntry }>) =>
        Effect.gen(function*() {
          if (delivered.length === 0) return 0
          // Each export probed by its key whatever the statistics (the plan is cached on the connection).
          yield* keyedWriteSettings(sql)
          const updated = yield* deliverStatement(sql, delivered.map((d) => d.claimed))
          if (updated.length === 0) return 0
          const ours = new Set(updated.map((row) => row.id))
          const rows = delivered.filter((d) => ours.has(d.claimed.id))
          const pick = <A>(f: (d: { readonly claimed: ClaimedExport; readonly entry: LedgerEntry }) => A) => rows.map(f)
          yield* sql`
            INSERT INTO export_deliveries (id, profile_id, export_id, destination_id, outcome_event_id, event_id, attempt, decision,
                                           action_source, skip_reason, routing, event_name, provider_status, error_code)
            SELECT gen_random_uuid(), v.profile_id, v.export_id, v.destination_id, v.outcome_event_id, v.event_id, v.attempt, 'delivered',
                   v.action_source, v.skip_reason, NULL, v.event_name, 200, NULL
            FROM unnest(
              ${pick((d) => d.claimed.profile_id)}::uuid[], ${pick((d) => d.claimed.id)}::uuid[],
              ${pick((d) => d.claimed.destination_id)}::uuid[], ${pick((d) => d.claimed.outcome_event_id)}::uuid[],
              ${pick((d) => d.claimed.event_id)}::text[], ${pick((d) => d.claimed.attempts + 1)}::int[],
              ${nullableColumn(pick((d) => d.entry.actionSource))}::text[], ${nullableColumn(pick((d) => d.entry.skipReason))}::text[],
              ${nullableColumn(pick((d) => d.entry.eventName))}::text[])
            AS v(profile_id, export_id, destination_id, outcome_event_id, event_id, attempt, action_source, skip_reason, event_name)`
          return rows.length
        }).pipe(sql.withTransaction)

      const recordTest = (entry: TestLedgerEntry) =>
        Effect.asVoid(sql`
          INSERT INTO export_deliveries (id, profile_id, destination_id, event_id, attempt, decision, action_source, skip_reason,
                                         routing, event_name, provider_status, error_code, is_test)
          VALUES (${crypto.randomUUID()}, ${entry.profileId}, ${entry.destinationId}, ${entry.eventId}, 1, ${entry.decision},
                  ${entry.actionSource}, ${entry.skipReason}, ${entry.routing}, ${entry.eventName}, ${entry.providerStatus},
                  ${entry.errorCode}, true)`)

      const deliveries = (filter: DeliveriesFilter) =>
        deliveryRows(sql`
          SELECT id, destination_id, outcome_event_id, event_id, attempt, decision, action_source, skip_reason, routing, event_name,
                 provider_status, error_code, is_test, ${isoTimestamp(sql, "created_at")} AS created_at
          FROM export_deliveries
          WHERE profile_id = ${filter.profileId}
            ${filter.destinationId === null ? sql`` : sql`AND destination_id = ${filter.destinationId}`}
            ${filter.skipReason === null ? sql`` : sql`AND skip_reason = ${filter.skipReason}`}
            ${Option.match(filter.after, { onNone: () => sql``, onSome: (k) => sql`AND (created_at, id) < (${k.createdAt}::timestamptz, ${k.id}::uuid)` })}
          ORDER BY created_at DESC, id DESC LIMIT ${filter.limit + 1}`)

      // Each read stops at its cap through an index that holds exactly its rows (migration 0056).
      const backlogOf = (countCap: number, rateCap: number) =>
        sql`
          (SELECT count(*)::int FROM (SELECT 1 FROM conversion_exports x
            WHERE x.destination_id = d.id AND x.status IN ('pending', 'held') LIMIT ${countCap}) n) AS pending,
          (SELECT greatest(0, floor(extract(epoch FROM now() - x.created_at)))::int FROM conversion_exports x
            WHERE x.destination_id = d.id AND x.status IN ('pending', 'held') ORDER BY x.created_at LIMIT 1) AS oldest_pending_age_seconds,
          (SELECT count(*)::int FROM (SELECT 1 FROM export_deliveries l
            WHERE l.destination_id = d.id AND l.decision = 'delivered' AND NOT l.is_test AND l.created_at > now() - interval '60 seconds'
            LIMIT ${rateCap}) n) AS delivered_last_minute`
      const backlogRows = decodeRows(BacklogRow)

      const backlogs = (destinationIds: ReadonlyArray<string>, countCap: number, rateCap: number) =>
        destinationIds.length === 0 ? Effect.succeed([]) : backlogRows(sql`
          SELECT d.id::text AS id, ${backlogOf(countCap, rateCap)}
          FROM unnest(${destinationIds}::uuid[]) AS d(id)`)

      const backlogLeaders = (limit: number, countCap: number, rateCap: number) =>
        backlogRows(sql`
          SELECT d.id::text AS id, ${backlogOf(countCap, rateCap)}
          FROM (
            SELECT e.id, o.created_at FROM export_destinations e
            CROSS JOIN LATERAL (
              SELECT x.created_at FROM conversion_exports x
              WHERE x.destination_id = e.id AND x.status IN ('pending', 'held') ORDER BY x.created_at LIMIT 1) o
            WHERE e.deleted_at IS NULL
            ORDER BY o.created_at, e.id
            LIMIT ${limit}) d
          ORDER BY d.created_at, d.id`)

      return atDatabaseBoundary({
        enqueue,
        enqueueFromCursor,
        release,
        claim,
        renew,
        facts,
        decide,
        deliverMany,
        recordTest,
        deliveries,
        backlogs,
        backlogLeaders
      })
    })
  )
}

