/**
 * The replay bench's profile, generated with set-based SQL (generate_series, no row-by-row
 * inserts) in one transaction, then vacuumed and analyzed as autovacuum would have done on a
 * live profile.
 *
 * Shape (defaults; see `DatasetOptions`):
 * - `customers` customers (100k). 60 % have an anonymous id bound by `customer_identifiers`
 *   (`a-<i>-1`), 15 % a second one (`a-<i>-2`, another device).
 * - `customers / 2` anonymous visitors never bound to a customer (`v-<j>`).
 * - Conversions: 1 customer in 20 converts (5 %), 30 % of them twice, 10 % three times; 85 % are
 *   `purchase` (default definition, 30-day window, cash), 15 % `lead` (14-day window), spread
 *   over the 13 months.
 * - Touches, `touches` in all (1M), over 13 months (395 days): 1 to 8 per conversion in the
 *   35 days before it (the journey that led to it), the rest background traffic: 35 % from
 *   unbound visitors, 65 % from customers, half of those before identification (carrying only a
 *   bound anonymous id when the customer has one). Channel mix of the eight channels; 2 % of
 *   touches are of kind `outcome` (never creditable).
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"

export interface DatasetOptions {
  readonly touches: number
  readonly customers: number
  /** One customer in `convertEvery` converts. */
  readonly convertEvery: number
  /**
   * Also give touches what analytics slices by (the analytics bench): paid touches (40 %) carry
   * one of 400 ads (100 ad sets, 20 campaigns), and every touch a referrer, page, country,
   * device, browser and OS; paid search touches a `utm_term`. Skewed, so a few values dominate.
   */
  readonly attributes?: boolean
}

export interface Dataset {
  readonly workspaceId: string
  readonly profileId: string
  readonly purchaseDefinitionId: string
  readonly leadDefinitionId: string
  readonly touches: number
  readonly conversions: number
  readonly customers: number
  readonly boundAnonymousIds: number
  readonly visitors: number
  readonly end: Date
}

export const SPAN_DAYS = 395

const KIND = (r: string) => `CASE WHEN ${r} < 0.85 THEN 'web_touch' WHEN ${r} < 0.90 THEN 'synthetic'
  WHEN ${r} < 0.94 THEN 'organic_interaction' WHEN ${r} < 0.96 THEN 'inherited' WHEN ${r} < 0.98 THEN 'proxy_click'
  ELSE 'outcome' END`

/** Extra touch columns and their values (`r.rc` is the channel draw: below 0.40 is paid). */
const ATTRIBUTE_COLUMNS = ", campaign_external_id, ad_set_external_id, ad_external_id, referrer_domain, path, payload, country, device, browser, os"
const ATTRIBUTE_VALUES = `,
  CASE WHEN r.rc < 0.40 THEN 'c-' || floor(r.rc * 50)::int END,
  CASE WHEN r.rc < 0.40 THEN 'as-' || floor(r.rc * 250)::int END,
  CASE WHEN r.rc < 0.40 THEN 'ad-' || floor(r.rc * 1000)::int END,
  (ARRAY['google.com', 'bing.com', 'facebook.com', 'instagram.com', 'news.example', 'blog.example', NULL, NULL])[1 + floor(random() * 8)::int],
  '/p/' || floor(random() * random() * 200)::int,
  CASE WHEN r.rc < 0.22 THEN jsonb_build_object('utm', jsonb_build_object('utm_term', 'kw-' || floor(random() * random() * 300)::int))
       ELSE '{}'::jsonb END,
  (ARRAY['ES', 'FR', 'DE', 'IT', 'PT', 'GB', 'US', 'MX', 'BR', 'AR', 'NL', 'BE', 'CH', 'AT', 'SE', 'NO', 'DK', 'PL', 'IE', 'CA'])
    [1 + floor(random() * random() * 20)::int],
  (ARRAY['mobile', 'desktop', 'tablet'])[1 + floor(random() * random() * 3)::int],
  (ARRAY['Chrome', 'Safari', 'Firefox', 'Edge', 'Samsung Internet'])[1 + floor(random() * random() * 5)::int],
  (ARRAY['Android', 'iOS', 'Windows', 'macOS', 'Linux'])[1 + floor(random() * random() * 5)::int]`

const CHANNEL = (r: string) => `CASE WHEN ${r} < 0.22 THEN 'paid_search' WHEN ${r} < 0.40 THEN 'paid_social'
  WHEN ${r} < 0.60 THEN 'organic_search' WHEN ${r} < 0.66 THEN 'organic_social' WHEN ${r} < 0.72 THEN 'referral'
  WHEN ${r} < 0.82 THEN 'email' WHEN ${r} < 0.86 THEN 'messaging' ELSE 'direct' END`

export const generateDataset = (sql: SqlClient, options: DatasetOptions) =>
  Effect.gen(function*() {
    const workspaceId = crypto.randomUUID()
    const profileId = crypto.randomUUID()
    const purchaseDefinitionId = crypto.randomUUID()
    const leadDefinitionId = crypto.randomUUID()
    const end = new Date(Math.floor(Date.now() / 1000) * 1000)
    const customers = options.customers
    const visitors = Math.max(1, Math.floor(customers / 2))
    const kind = sql.literal(KIND("r.rk"))
    const channel = sql.literal(CHANNEL("r.rc"))
    const attributeColumns = sql.literal(options.attributes === true ? ATTRIBUTE_COLUMNS : "")
    const attributeValues = sql.literal(options.attributes === true ? ATTRIBUTE_VALUES : "")
    // A customer's id is md5(profile || ':c:' || index), so touches and conversions can name it.

    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`SELECT setseed(0.4242)`
      yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'bench-replay')`
      yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${profileId}, ${workspaceId}, 'bench-replay')`
      yield* sql`
        INSERT INTO conversion_definitions
          (id, profile_id, conversion_key, name, event_names, lookback_window_days, is_default, counts_as_cash)
        VALUES (${purchaseDefinitionId}, ${profileId}, 'purchase', 'Purchase', '{purchase}', 30, true, true),
               (${leadDefinitionId}, ${profileId}, 'lead', 'Lead', '{lead}', 14, false, false)`
      yield* sql`
        INSERT INTO customers (id, profile_id, customer_key, created_at)
        SELECT md5(${profileId}::text || ':c:' || i)::uuid, ${profileId}, 'cust-' || i, ${end}::timestamptz - make_interval(days => ${SPAN_DAYS}::int)
        FROM generate_series(1, ${customers}::int) i`
      yield* sql`
        INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value, is_primary)
        SELECT md5(${profileId}::text || ':ci:' || i || ':' || k)::uuid, ${profileId}, md5(${profileId}::text || ':c:' || i)::uuid,
               'anonymous_id', 'a-' || i || '-' || k, k = 1
        FROM generate_series(1, ${customers}::int) i, generate_series(1, 2) k
        WHERE (k = 1 AND i % 10 < 6) OR (k = 2 AND i % 20 < 3)`
      yield* sql`
        CREATE TEMP TABLE bench_conv ON COMMIT DROP AS
        WITH cv AS MATERIALIZED (
          SELECT i, 1 + (random() < 0.3)::int + (random() < 0.1)::int AS k
          FROM generate_series(1, ${customers}::int) i WHERE i % ${options.convertEvery}::int = 7 % ${options.convertEvery}::int
        )
        SELECT md5(${profileId}::text || ':v:' || cv.i || ':' || n)::uuid AS id,
               md5(${profileId}::text || ':e:' || cv.i || ':' || n)::uuid AS event_id,
               cv.i, md5(${profileId}::text || ':c:' || cv.i)::uuid AS customer_id,
               date_trunc('milliseconds', ${end}::timestamptz - random() * make_interval(days => ${SPAN_DAYS - 10}::int)) AS at,
               random() < 0.85 AS purchase,
               1 + floor(random() * 8)::int AS pre_k,
               round((5 + random() * 200)::numeric, 2) AS amount
        FROM cv, generate_series(1, cv.k) n`
      yield* sql`
        INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at, received_at,
                                    value_amount, currency, customer_id)
        SELECT c.event_id, ${profileId}, 'bench-' || c.id, 'bench', CASE WHEN c.purchase THEN 'purchase' ELSE 'lead' END,
               c.at, c.at, CASE WHEN c.purchase THEN c.amount END, CASE WHEN c.purchase THEN 'EUR' END, c.customer_id
        FROM bench_conv c`
      yield* sql`
        INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at)
        SELECT ${profileId}, 'bench-' || c.id, c.event_id, c.at FROM bench_conv c`
      yield* sql`
        INSERT INTO conversions (id, profile_id, outcome_event_id, definition_id, conversion_key, occurred_at, value_amount,
                                 currency, customer_id, counts_as_cash, attribution_eligible, created_at)
        SELECT c.id, ${profileId}, c.event_id,
               CASE WHEN c.purchase THEN ${purchaseDefinitionId}::uuid ELSE ${leadDefinitionId}::uuid END,
               CASE WHEN c.purchase THEN 'purchase' ELSE 'lead' END, c.at,
               CASE WHEN c.purchase THEN c.amount END, CASE WHEN c.purchase THEN 'EUR' END, c.customer_id, c.purchase, true, c.at
        FROM bench_conv c`
      // The journeys: 1 to 8 touches in the 35 days before each conversion; 40 % carry only the
      // customer's bound anonymous id (when it has one), the others the customer.
      yield* sql`
        INSERT INTO touches (id, profile_id, kind, occurred_at, received_at, channel, customer_id, anonymous_id${attributeColumns})
        SELECT gen_random_uuid(), ${profileId}, ${kind}, r.at, r.at, ${channel},
               CASE WHEN r.ri < 0.6 OR r.i % 10 >= 6 THEN r.customer_id END,
               CASE WHEN r.ri >= 0.6 AND r.i % 10 < 6 THEN 'a-' || r.i || '-1' END${attributeValues}
        FROM (
          SELECT c.i, c.customer_id, date_trunc('milliseconds', c.at - random() * interval '35 days') AS at,
                 random() AS rk, random() AS rc, random() AS ri
          FROM bench_conv c, generate_series(1, c.pre_k) j
          OFFSET 0
        ) r`
      // Background traffic up to `touches` in all.
      yield* sql`
        INSERT INTO touches (id, profile_id, kind, occurred_at, received_at, channel, customer_id, anonymous_id${attributeColumns})
        SELECT gen_random_uuid(), ${profileId}, ${kind}, r.at, r.at, ${channel},
               CASE WHEN r.rv < 0.35 THEN NULL
                    WHEN r.ci % 10 < 6 AND r.ra < 0.5 THEN NULL
                    ELSE md5(${profileId}::text || ':c:' || r.ci)::uuid END,
               CASE WHEN r.rv < 0.35 THEN 'v-' || (1 + floor(r.rw * ${visitors}::int)::int)
                    WHEN r.ci % 10 < 6 AND r.ra < 0.5 THEN 'a-' || r.ci || '-' || CASE WHEN r.ci % 20 < 3 AND r.rb < 0.5 THEN 2 ELSE 1 END
                    WHEN r.ci % 10 < 6 AND r.ra < 0.7 THEN 'a-' || r.ci || '-1'
                    ELSE NULL END${attributeValues}
        FROM (
          SELECT 1 + floor(random() * ${customers}::int)::int AS ci, random() AS rv, random() AS ra, random() AS rb,
                 random() AS rw, random() AS rk, random() AS rc,
                 date_trunc('milliseconds', ${end}::timestamptz - random() * make_interval(days => ${SPAN_DAYS}::int)) AS at
          FROM generate_series(1, GREATEST(0, ${options.touches}::int - (SELECT COALESCE(sum(pre_k), 0)::int FROM bench_conv)))
          OFFSET 0
        ) r`
    }))
    for (const table of ["touches", "conversions", "outcome_events", "customers", "customer_identifiers", "attribution_credits"]) {
      yield* sql.unsafe(`VACUUM (ANALYZE) ${table}`)
    }
    const [counts] = yield* sql<{ touches: number; conversions: number; customers: number; bound: number }>`
      SELECT (SELECT count(*)::int FROM touches WHERE profile_id = ${profileId}) AS touches,
             (SELECT count(*)::int FROM conversions WHERE profile_id = ${profileId}) AS conversions,
             (SELECT count(*)::int FROM customers WHERE profile_id = ${profileId}) AS customers,
             (SELECT count(*)::int FROM customer_identifiers WHERE profile_id = ${profileId}) AS bound`
    return {
      workspaceId,
      profileId,
      purchaseDefinitionId,
      leadDefinitionId,
      touches: counts?.touches ?? 0,
      conversions: counts?.conversions ?? 0,
      customers: counts?.customers ?? 0,
      boundAnonymousIds: counts?.bound ?? 0,
      visitors,
      end
    } satisfies Dataset
  })

/** A profile generated earlier and kept (`BENCH_KEEP=1`), to measure again without generating. */
export const existingDataset = (sql: SqlClient, profileId: string) =>
  Effect.gen(function*() {
    const [row] = yield* sql<{ workspace_id: string; purchase: string; lead: string }>`
      SELECT p.workspace_id::text AS workspace_id,
             (SELECT id::text FROM conversion_definitions WHERE profile_id = p.id AND conversion_key = 'purchase') AS purchase,
             (SELECT id::text FROM conversion_definitions WHERE profile_id = p.id AND conversion_key = 'lead') AS lead
      FROM profiles p WHERE p.id = ${profileId}::uuid AND p.name = 'bench-replay'`
    if (row === undefined) return yield* Effect.fail(new Error(`no bench-replay profile ${profileId} in this database`))
    const [counts] = yield* sql<{ touches: number; conversions: number; customers: number; bound: number; visitors: number }>`
      SELECT (SELECT count(*)::int FROM touches WHERE profile_id = ${profileId}) AS touches,
             (SELECT count(*)::int FROM conversions WHERE profile_id = ${profileId}) AS conversions,
             (SELECT count(*)::int FROM customers WHERE profile_id = ${profileId}) AS customers,
             (SELECT count(*)::int FROM customer_identifiers WHERE profile_id = ${profileId}) AS bound,
             (SELECT count(DISTINCT anonymous_id)::int FROM touches WHERE profile_id = ${profileId} AND anonymous_id LIKE 'v-%') AS visitors`
    return {
      workspaceId: row.workspace_id,
      profileId,
      purchaseDefinitionId: row.purchase,
      leadDefinitionId: row.lead,
      touches: counts?.touches ?? 0,
      conversions: counts?.conversions ?? 0,
      customers: counts?.customers ?? 0,
      boundAnonymousIds: counts?.bound ?? 0,
      visitors: counts?.visitors ?? 0,
      end: new Date()
    } satisfies Dataset
  })

/** Back to the generated state: no credit rows, nothing credited, the purchase window 30 days. */
export const resetDataset = (sql: SqlClient, dataset: Dataset) =>
  Effect.gen(function*() {
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`DELETE FROM attribution_credits WHERE conversion_id IN (SELECT id FROM conversions WHERE profile_id = ${dataset.profileId})`
      yield* sql`
        INSERT INTO credit_queue (profile_id, conversion_id, occurred_at, created_at)
        SELECT profile_id, id, occurred_at, created_at FROM conversions WHERE profile_id = ${dataset.profileId}
        ON CONFLICT DO NOTHING`
      yield* sql`UPDATE conversion_definitions SET lookback_window_days = 30 WHERE id = ${dataset.purchaseDefinitionId}`
    }))
    for (const table of ["attribution_credits", "conversions", "credit_queue"]) yield* sql.unsafe(`VACUUM (ANALYZE) ${table}`)
  })

/**
 * Removes what the dataset and the replays wrote, except the customers and the profile that
 * holds them: deleting a customer makes PostgreSQL check `customers.merged_into_id` and
 * `conversions.payer_customer_id`, which have no index, so 100k customers take a sequential scan
 * each (hours). The customers are small (about 16 MB per 100k); a dedicated database is best.
 * Each statement commits on its own, so an interrupted drop keeps what it removed.
 */
export const dropDataset = (sql: SqlClient, dataset: Pick<Dataset, "profileId">) =>
  Effect.gen(function*() {
    const p = dataset.profileId
    yield* sql`DELETE FROM attribution_credits WHERE conversion_id IN (SELECT id FROM conversions WHERE profile_id = ${p})`
    yield* sql`DELETE FROM conversions WHERE profile_id = ${p}`
    // The key rows first: they name their events (decision 0146).
    yield* sql`DELETE FROM outcome_keys WHERE profile_id = ${p}`
    yield* sql`DELETE FROM outcome_events WHERE profile_id = ${p}`
    yield* sql`DELETE FROM touches WHERE profile_id = ${p}`
    yield* sql`DELETE FROM touch_keys WHERE profile_id = ${p}`
    yield* sql`DELETE FROM customer_identifiers WHERE profile_id = ${p}`
    yield* sql`DELETE FROM conversion_definitions WHERE profile_id = ${p}`
    yield* sql`DELETE FROM work_jobs WHERE profile_id = ${p}`
    yield* sql`UPDATE profiles SET name = 'bench-replay (dropped)' WHERE id = ${p}`
  })
