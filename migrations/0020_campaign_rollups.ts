import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Campaign, ad set and ad rollups (decision 0042): per profile × model × (optional touch-filter
 * value) × level × platform id × day × conversion key × currency, what the model credits to the
 * touches carrying that id. `platform_id = ''` is the remainder of the level: conversions whose
 * credit (within the filter) reaches no touch with an id at that level, and the share of credit
 * that no id got (without a filter every conversion weighs 1, credited or not), so entity rows
 * plus the remainder add up to the overview. Keyed by the touches' platform ids, never by the
 * synced structure, so a sync changes no rollup; reads join the synced copy (migration 0013).
 * Kept current by the dirty-day triggers of migration 0019 (conversions, credits, touches: a
 * touch update that changes its campaign / ad set / ad ids or channel already marks its days)
 * and recomputed by the same rollup job.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE analytics_campaign_days (
      profile_id uuid NOT NULL,
      model text NOT NULL,
      filter_dimension text NOT NULL,
      filter_value text NOT NULL,
      level text NOT NULL CHECK (level IN ('campaign', 'ad_set', 'ad')),
      platform_id text NOT NULL,
      day date NOT NULL,
      conversion_key text NOT NULL,
      currency text NOT NULL,
      conversions integer NOT NULL,
      cash_payments integer NOT NULL,
      first_payments integer NOT NULL,
      credited_conversions numeric NOT NULL,
      credited_revenue numeric NOT NULL,
      outcome_value numeric NOT NULL,
      PRIMARY KEY (profile_id, model, filter_dimension, filter_value, level, platform_id, day, conversion_key, currency)
    )`
  yield* sql`CREATE INDEX analytics_campaign_days_day ON analytics_campaign_days (profile_id, day)`
  // The conversions list of one campaign reads the credited touches carrying its id.
  yield* sql`
    CREATE INDEX touches_campaign ON touches (profile_id, campaign_external_id) WHERE campaign_external_id IS NOT NULL`
})
