/**
 * The owner of `touches` (DESIGN.md, "Table ownership"): every statement that writes a touch,
 * from the web tracker, partner data, identity resolution, merges, link decisions and erasure.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"
import { byKey } from "../../platform/claim-settings.ts"
import type { TouchKind } from "../models/index.ts"

// Re-exported for the readers that still take it from here.
export { TouchColumns } from "./columns.ts"

/** A web tracker touch (src/ingestion/tracking/tracker). */
export interface NewWebTouch {
  readonly profileId: string
  /** ISO time; null: when the database receives it. */
  readonly occurredAt: string | null
  readonly idempotencyKey: string | null
  readonly eventType: string
  readonly anonymousId: string
  readonly sessionId: string | null
  readonly channel: string
  readonly source: string
  readonly medium: string
  readonly campaignExternalId: string | null
  readonly campaignName: string | null
  readonly clickIdKind: string | null
  readonly clickId: string | null
  readonly url: string
  readonly path: string
  readonly referrerDomain: string | null
  readonly device: string | null
  readonly browser: string | null
  readonly os: string | null
  readonly country: string | null
  readonly city: string | null
  /** The browser `Origin` the collector accepted (one of the allowed origins); null for other senders. */
  readonly collectorOrigin: string | null
  /**
   * The customer a verified link token names (decision 0037): the touch binds to it, or to its
   * survivor when it was merged, with `join_method: link_token`; an erased one binds nothing.
   */
  readonly linkCustomerId: string | null
  readonly payload: Record<string, unknown>
}

/** A web touch with the id it is inserted under. */
export interface WebTouchRow {
  readonly id: string
  readonly touch: NewWebTouch
}

/** A referral or declared-source touch of partner data (src/partner). */
export interface NewPartnerTouch {
  readonly id: string
  readonly profileId: string
  readonly kind: TouchKind
  /** ISO 8601 with offset. */
  readonly occurredAt: string
  readonly sourceSystem: string
  readonly idempotencyKey: string
  readonly customerId: string
  readonly joinMethod: "ctwa_referral" | null
  readonly channel: string
  readonly source: string
  readonly medium: string
  readonly campaignExternalId: string | null
  readonly campaignName: string | null
  readonly adSetExternalId: string | null
  readonly adSetName: string | null
  readonly adExternalId: string | null
  readonly adName: string | null
  readonly clickIdKind: string | null
  readonly clickId: string | null
  readonly payload: Readonly<Record<string, unknown>>
}

/** A browser (tracker anonymous id) of a profile and the customer its unbound touches join. */
export interface VisitorBinding {
  readonly profileId: string
  readonly anonymousId: string
  readonly customerId: string
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

/**
 * Each visitor's unbound touches join its customer (`bindVisitors`); answers the customers joined.
 * A visitor's touches are read by the anonymous id through `touches_visitor` (migration 0080), the
 * profile a filter: with the profile as an equality, a plan made while a month was small (no
 * statistics here) could walk the profile instead (decision 0155). Run under `byKeySettings`:
 * kept from an empty month without them, the update's join hashed every touch of the table.
 * test/api/visitor-reads-plan.test.ts checks its kept plans.
 */
export const bindVisitorsStatement = (sql: SqlClient, visitors: ReadonlyArray<VisitorBinding>) =>
  sql<{ customer_id: string }>`
    WITH bound AS (
      UPDATE touches t SET customer_id = m.customer_id, join_method = 'anonymous_id'
      FROM (
        SELECT x.id, v.customer_id
        FROM unnest(${visitors.map((v) => v.profileId)}::uuid[], ${visitors.map((v) => v.anonymousId)}::text[],
                    ${visitors.map((v) => v.customerId)}::uuid[]) AS v(profile_id, anonymous_id, customer_id)
        CROSS JOIN LATERAL (SELECT id FROM touches
                            WHERE anonymous_id = v.anonymous_id AND profile_id IS NOT DISTINCT FROM v.profile_id AND customer_id IS NULL
                            OFFSET 0) x
      ) m
      WHERE t.id = m.id AND t.customer_id IS NULL
      RETURNING t.customer_id
    )
    SELECT DISTINCT customer_id::text AS customer_id FROM bound`

/** One visitor's unbound touches join `customerId` (`bindVisitor`); answers how many. */
export const bindVisitorStatement = (
  sql: SqlClient,
  profileId: string,
  anonymousId: string,
  customerId: string,
  joinMethod: "click_id" | "anonymous_id"
) =>
  sql<{ n: number }>`
    WITH b AS (
      UPDATE touches SET customer_id = ${customerId}::uuid, join_method = ${joinMethod}
      WHERE anonymous_id = ${anonymousId} AND profile_id IS NOT DISTINCT FROM ${profileId}::uuid AND customer_id IS NULL
      RETURNING id
    )
    SELECT count(*)::int AS n FROM b`

export class TouchesRepo extends Context.Service<TouchesRepo, {
  /** Web touch rows, one statement; answers the ids inserted (a key stored before, or earlier in the batch, is not). */
  readonly insertWebTouches: (touches: ReadonlyArray<WebTouchRow>) => Repo<ReadonlySet<string>>
  /** Inserts partner touches (one statement); a key already taken is skipped. Answers the keys inserted. */
  readonly insertPartnerTouches: (touches: ReadonlyArray<NewPartnerTouch>) => Repo<ReadonlyArray<string>>
  /**
   * Binds the unbound touches of these browsers to their customers (`join_method: anonymous_id`);
   * answers the customers that got a touch, each once.
   */
  readonly bindVisitors: (visitors: ReadonlyArray<VisitorBinding>) => Repo<ReadonlyArray<string>>
  /** Binds one browser's unbound touches of the profile to the customer (an accepted identity link); answers how many. */
  readonly bindVisitor: (
    profileId: string,
    anonymousId: string,
    customerId: string,
    joinMethod: "click_id" | "anonymous_id"
  ) => Repo<number>
  /** A merge: the merged customer's touches go to the survivor; answers their ids. */
  readonly moveToCustomer: (fromCustomerId: string, toCustomerId: string) => Repo<ReadonlyArray<string>>
  /** A merge's undo: these touches go back to the merged customer while the survivor still holds them. */
  readonly returnToCustomer: (touchIds: ReadonlyArray<string>, fromCustomerId: string, toCustomerId: string) => Repo<void>
  /**
   * Erasure: every touch of the customers, and every other touch from their browsers (their
   * touches' anonymous ids and their `anonymous_id` identifiers), loses its person and what
   * identifies the browser. Answers how many.
   */
  readonly forgetCustomers: (customerIds: ReadonlyArray<string>) => Repo<number>
}>()("svc/TouchesRepo") {
  static readonly layer = Layer.effect(TouchesRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const keyRows = decodeRows(Schema.Struct({ key: Schema.String }))
      const idRows = decodeRows(Schema.Struct({ id: Schema.String }))
      const customerRows = decodeRows(Schema.Struct({ customer_id: Schema.String }))
      const firstCount = decodeFirstRow(Schema.Struct({ n: Schema.Int }))

      // One statement for a batch of tracker events (group commit, Touches.insertWebTouch), its rows as
      // a JSON document. Per row: the customer a link token names (followed to its survivor, erased
      // binds nothing), else the customer holding the browser's anonymous id. A key already stored,
      // or taken earlier in the batch, is skipped: the answer is the ids inserted.
      const insertWebTouches = (touches: ReadonlyArray<WebTouchRow>) => {
        if (touches.length === 0) return Effect.succeed<ReadonlySet<string>>(new Set())
        const rows = touches.map(({ id, touch }, n) => ({
          n,
          id,
          profile_id: touch.profileId,
          occurred_at: touch.occurredAt,
          idempotency_key: touch.idempotencyKey,
          event_type: touch.eventType,
          anonymous_id: touch.anonymousId,
          session_id: touch.sessionId,
          channel: touch.channel,
          source: touch.source,
          medium: touch.medium,
          campaign_external_id: touch.campaignExternalId,
          campaign_name: touch.campaignName,
          click_id_kind: touch.clickIdKind,
          click_id: touch.clickId,
          url: touch.url,
          path: touch.path,
          referrer_domain: touch.referrerDomain,
          device: touch.device,
          browser: touch.browser,
          os: touch.os,
          country: touch.country,
          city: touch.city,
          collector_origin: touch.collectorOrigin,
          link_customer_id: touch.linkCustomerId,
          payload: touch.payload
        }))
        return Effect.map(
          idRows(sql`
            WITH v AS (
              SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS v(
                n int, id uuid, profile_id uuid, occurred_at timestamptz, idempotency_key text, event_type text,
                anonymous_id text, session_id text, channel text, source text, medium text, campaign_external_id text,
                campaign_name text, click_id_kind text, click_id text, url text, path text, referrer_domain text,
                device text, browser text, os text, country text, city text, collector_origin text,
                link_customer_id uuid, payload jsonb)),
            -- The keys first, in the batch's order: a key stored already, or taken earlier in the
            -- batch, claims nothing, and its row is not inserted (touch_keys holds keys across months).
            keyed AS (
              INSERT INTO touch_keys (profile_id, source_system, idempotency_key, touch_id, occurred_at)
              SELECT v.profile_id, 'tracker', v.idempotency_key, v.id, COALESCE(v.occurred_at, now())
              FROM v WHERE v.idempotency_key IS NOT NULL ORDER BY v.n
              ON CONFLICT DO NOTHING
              RETURNING touch_id)
            INSERT INTO touches (
              id, profile_id, kind, occurred_at, source_system, idempotency_key, event_type, anonymous_id, session_id,
              customer_id, join_method, channel, source, medium, campaign_external_id, campaign_name, click_id_kind,
              click_id, url, path, referrer_domain, device, browser, os, country, city, collector_origin, payload)
            SELECT
              v.id, v.profile_id, 'web_touch', COALESCE(v.occurred_at, now()), 'tracker', v.idempotency_key, v.event_type,
              v.anonymous_id, v.session_id, COALESCE(l.customer_id, b.customer_id),
              CASE WHEN l.customer_id IS NOT NULL THEN 'link_token' WHEN b.customer_id IS NOT NULL THEN 'anonymous_id' END,
              v.channel, v.source, v.medium, v.campaign_external_id, v.campaign_name, v.click_id_kind, v.click_id, v.url,
              v.path, v.referrer_domain, v.device, v.browser, v.os, v.country, v.city, v.collector_origin, v.payload
            FROM v
            LEFT JOIN LATERAL (
              WITH RECURSIVE linked_chain AS (
                SELECT c.id, c.merged_into_id, c.erased_at, 0 AS depth FROM customers c
                WHERE c.id = v.link_customer_id AND c.profile_id = v.profile_id
                UNION ALL
                SELECT c.id, c.merged_into_id, c.erased_at, l.depth + 1
                FROM linked_chain l JOIN customers c ON c.id = l.merged_into_id AND c.profile_id = v.profile_id
                WHERE l.erased_at IS NULL AND l.depth < 16
              )
              SELECT id AS customer_id FROM linked_chain WHERE merged_into_id IS NULL AND erased_at IS NULL LIMIT 1
            ) l ON true
            LEFT JOIN LATERAL (
              SELECT ci.customer_id
              FROM customer_identifiers ci
              -- The whole key (decision 0137).
              JOIN customers c ON c.id = ci.customer_id AND c.profile_id = ci.profile_id
                               AND c.merged_into_id IS NULL AND c.erased_at IS NULL
              WHERE ci.profile_id = v.profile_id AND ci.kind = 'anonymous_id' AND ci.value = v.anonymous_id
                AND ci.removed_at IS NULL
              ORDER BY ci.is_primary DESC, ci.created_at DESC
              LIMIT 1
            ) b ON true
            WHERE v.idempotency_key IS NULL OR v.id IN (SELECT touch_id FROM keyed)
            ORDER BY v.n
            RETURNING id`),
          (inserted): ReadonlySet<string> => new Set(inserted.map((row) => row.id))
        )
      }

      // One statement for the batch, its rows as a JSON document (arrays of only nulls carry no type).
      const insertPartnerTouches = (touches: ReadonlyArray<NewPartnerTouch>) => {
        if (touches.length === 0) return Effect.succeed<ReadonlyArray<string>>([])
        const rows = touches.map((t, n) => ({
          n,
          id: t.id,
          profile_id: t.profileId,
          kind: t.kind,
          occurred_at: t.occurredAt,
          source_system: t.sourceSystem,
          idempotency_key: t.idempotencyKey,
          customer_id: t.customerId,
          join_method: t.joinMethod,
          channel: t.channel,
          source: t.source,
          medium: t.medium,
          campaign_external_id: t.campaignExternalId,
          campaign_name: t.campaignName,
          ad_set_external_id: t.adSetExternalId,
          ad_set_name: t.adSetName,
          ad_external_id: t.adExternalId,
          ad_name: t.adName,
          click_id_kind: t.clickIdKind,
          click_id: t.clickId,
          payload: t.payload
        }))
        return Effect.map(
          keyRows(sql`
            WITH r AS (
              SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(
                n int, id uuid, profile_id uuid, kind text, occurred_at timestamptz, source_system text, idempotency_key text,
                customer_id uuid, join_method text, channel text, source text, medium text, campaign_external_id text,
                campaign_name text, ad_set_external_id text, ad_set_name text, ad_external_id text, ad_name text,
                click_id_kind text, click_id text, payload jsonb)),
            -- Each key once, across months (touch_keys): a key already taken inserts no touch.
            keyed AS (
              INSERT INTO touch_keys (profile_id, source_system, idempotency_key, touch_id, occurred_at)
              SELECT r.profile_id, r.source_system, r.idempotency_key, r.id, r.occurred_at FROM r ORDER BY r.n
              ON CONFLICT DO NOTHING
              RETURNING touch_id)
            INSERT INTO touches (id, profile_id, kind, occurred_at, source_system, idempotency_key, customer_id, join_method,
                                 channel, source, medium, campaign_external_id, campaign_name, ad_set_external_id,
                                 ad_set_name, ad_external_id, ad_name, click_id_kind, click_id, payload)
            SELECT r.id, r.profile_id, r.kind, r.occurred_at, r.source_system, r.idempotency_key, r.customer_id, r.join_method,
                   r.channel, r.source, r.medium, r.campaign_external_id, r.campaign_name, r.ad_set_external_id,
                   r.ad_set_name, r.ad_external_id, r.ad_name, r.click_id_kind, r.click_id, COALESCE(r.payload, '{}'::jsonb)
            FROM r WHERE r.id IN (SELECT touch_id FROM keyed)
            ORDER BY r.n
            RETURNING idempotency_key AS key`),
          (rows) => rows.map((row) => row.key)
        )
      }

      const bindVisitors = (visitors: ReadonlyArray<VisitorBinding>) =>
        visitors.length === 0 ? Effect.succeed<ReadonlyArray<string>>([]) : Effect.map(
          byKey(sql, customerRows(bindVisitorsStatement(sql, visitors))),
          (rows) => rows.map((row) => row.customer_id)
        )

      const bindVisitor = (profileId: string, anonymousId: string, customerId: string, joinMethod: "click_id" | "anonymous_id") =>
        Effect.map(
          firstCount(bindVisitorStatement(sql, profileId, anonymousId, customerId, joinMethod)),
          Option.match({ onNone: () => 0, onSome: (row) => row.n })
        )

      const moveToCustomer = (fromCustomerId: string, toCustomerId: string) =>
        Effect.map(
          idRows(sql`UPDATE touches SET customer_id = ${toCustomerId} WHERE customer_id = ${fromCustomerId} RETURNING id::text AS id`),
          (rows) => rows.map((row) => row.id)
        )

      const returnToCustomer = (touchIds: ReadonlyArray<string>, fromCustomerId: string, toCustomerId: string) =>
        Effect.asVoid(sql`
          UPDATE touches SET customer_id = ${toCustomerId} WHERE id = ANY(${touchIds}::uuid[]) AND customer_id = ${fromCustomerId}`)

      const forgetCustomers = (ids: ReadonlyArray<string>) =>
        Effect.map(
          sql`
            WITH browsers AS (
              SELECT DISTINCT anonymous_id, profile_id FROM touches
              WHERE customer_id = ANY(${ids}::uuid[]) AND anonymous_id IS NOT NULL
              UNION
              SELECT value, profile_id FROM customer_identifiers WHERE customer_id = ANY(${ids}::uuid[]) AND kind = 'anonymous_id'
            )
            UPDATE touches t
            SET customer_id = NULL, anonymous_id = NULL, session_id = NULL, click_id = NULL, url = NULL, city = NULL,
                payload = '{}'::jsonb
            WHERE t.customer_id = ANY(${ids}::uuid[])
               OR EXISTS (SELECT 1 FROM browsers b WHERE b.profile_id = t.profile_id AND b.anonymous_id = t.anonymous_id)
            RETURNING t.id`,
          (rows) => rows.length
        )

      return atDatabaseBoundary({
        insertWebTouches,
        insertPartnerTouches,
        bindVisitors,
        bindVisitor,
        moveToCustomer,
        returnToCustomer,
        forgetCustomers
      })
    })
  )
}
