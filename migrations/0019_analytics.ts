import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Analytics (decision 0041): the stored daily FX table, imported ad spend, the daily rollups the
 * analytics reads are served from, and the log of (profile, day) pairs whose rollups are stale.
 *
 * - `fx_rates`: one rate per (base, quote, day), imported by operators (`svc fx import`) from the
 *   ECB euro foreign exchange reference rates (base EUR, one fixing per TARGET business day).
 *   `analytics_fx_rate` answers the rate of a day: the latest fixing on or before it, at most 6
 *   days older, direct, inverse or crossed through a common base; null when there is none.
 * - `ad_spend`: spend per ad per day of the profile's time zone, in the ad account's currency.
 *   Imported through the internal path (`svc spend import`), later by the ad-platform sync; the
 *   key makes a re-import of a day an update, never a second row.
 * - Rollups: `analytics_conversion_days` (every conversion, per model), `analytics_credit_days`
 *   (credited conversions per dimension value, optionally within one touch-filter value) and
 *   `analytics_touch_days` (touches per dimension value, same shape). Days are calendar days in the
 *   profile's time zone; '' stands for "none" in key columns.
 * - `analytics_dirty`: statement-level triggers on the fact tables append the (profile, day) pairs
 *   a write touched, in the writer's transaction; the rollup job consumes them (day null = the
 *   whole profile, after a time-zone change). Append-only, so writers never wait on each other.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE fx_rates (
      base text NOT NULL CHECK (base ~ '^[A-Z]{3}$'),
      quote text NOT NULL CHECK (quote ~ '^[A-Z]{3}$'),
      day date NOT NULL,
      rate numeric NOT NULL CHECK (rate > 0),
      source text NOT NULL DEFAULT 'ecb',
      imported_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (base, quote, day),
      CHECK (base <> quote)
    )`
  yield* sql`CREATE INDEX fx_rates_quote ON fx_rates (quote, day)`
  yield* sql`
    CREATE FUNCTION analytics_fx_rate(from_currency text, to_currency text, on_day date) RETURNS numeric
    LANGUAGE sql STABLE AS $$
      SELECT CASE WHEN from_currency = to_currency THEN 1::numeric ELSE (
        SELECT x.rate FROM (
          SELECT f.day, f.rate, 0 AS preference FROM fx_rates f
          WHERE f.base = from_currency AND f.quote = to_currency AND f.day BETWEEN on_day - 6 AND on_day
          UNION ALL
          SELECT f.day, 1 / f.rate, 1 FROM fx_rates f
          WHERE f.base = to_currency AND f.quote = from_currency AND f.day BETWEEN on_day - 6 AND on_day
          UNION ALL
          SELECT a.day, b.rate / a.rate, 2 FROM fx_rates a
          JOIN fx_rates b ON b.base = a.base AND b.day = a.day AND b.quote = to_currency
          WHERE a.quote = from_currency AND a.day BETWEEN on_day - 6 AND on_day
        ) x ORDER BY x.day DESC, x.preference LIMIT 1) END
    $$`
  yield* sql`
    CREATE TABLE ad_spend (
      profile_id uuid NOT NULL REFERENCES profiles (id),
      platform text NOT NULL,
      day date NOT NULL,
      campaign_external_id text,
      ad_set_external_id text,
      ad_external_id text NOT NULL,
      currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
      amount numeric(20, 6) NOT NULL CHECK (amount >= 0),
      source text NOT NULL DEFAULT 'import',
      imported_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (profile_id, platform, day, ad_external_id)
    )`
  yield* sql`CREATE INDEX ad_spend_profile_day ON ad_spend (profile_id, day)`
  yield* sql`CREATE INDEX ad_spend_campaign ON ad_spend (profile_id, campaign_external_id, day)`
  yield* sql`CREATE INDEX ad_spend_ad_set ON ad_spend (profile_id, ad_set_external_id, day)`
  yield* sql`CREATE INDEX ad_spend_ad ON ad_spend (profile_id, ad_external_id, day)`

  // Money is per currency as the facts carry it ('' = the profile's currency) and converted on read.
  yield* sql`
    CREATE TABLE analytics_conversion_days (
      profile_id uuid NOT NULL,
      model text NOT NULL,
      day date NOT NULL,
      conversion_key text NOT NULL,
      currency text NOT NULL,
      conversions integer NOT NULL,
      cash_payments integer NOT NULL,
      first_payments integer NOT NULL,
      revenue numeric NOT NULL,
      attributed_conversions integer NOT NULL,
      credited_conversions numeric NOT NULL,
      credited_revenue numeric NOT NULL,
      PRIMARY KEY (profile_id, model, day, conversion_key, currency)
    )`
  yield* sql`CREATE INDEX analytics_conversion_days_day ON analytics_conversion_days (profile_id, day)`
  yield* sql`
    CREATE TABLE analytics_credit_days (
      profile_id uuid NOT NULL,
      model text NOT NULL,
      filter_dimension text NOT NULL,
      filter_value text NOT NULL,
      dimension text NOT NULL,
      value text NOT NULL,
      day date NOT NULL,
      conversion_key text NOT NULL,
      currency text NOT NULL,
      conversions integer NOT NULL,
      cash_payments integer NOT NULL,
      first_payments integer NOT NULL,
      credited_conversions numeric NOT NULL,
      credited_revenue numeric NOT NULL,
      PRIMARY KEY (profile_id, model, filter_dimension, filter_value, dimension, value, day, conversion_key, currency)
    )`
  yield* sql`CREATE INDEX analytics_credit_days_day ON analytics_credit_days (profile_id, day)`
  yield* sql`
    CREATE TABLE analytics_touch_days (
      profile_id uuid NOT NULL,
      filter_dimension text NOT NULL,
      filter_value text NOT NULL,
      dimension text NOT NULL,
      value text NOT NULL,
      day date NOT NULL,
      touches integer NOT NULL,
      PRIMARY KEY (profile_id, filter_dimension, filter_value, dimension, value, day)
    )`
  yield* sql`CREATE INDEX analytics_touch_days_day ON analytics_touch_days (profile_id, day)`

  yield* sql`
    CREATE TABLE analytics_dirty (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      profile_id uuid NOT NULL,
      day date,
      marked_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE FUNCTION analytics_mark_conversions() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO analytics_dirty (profile_id, day)
        SELECT DISTINCT c.profile_id, (c.occurred_at AT TIME ZONE p.time_zone)::date
        FROM new_rows c JOIN profiles p ON p.id = c.profile_id;
      END IF;
      IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO analytics_dirty (profile_id, day)
        SELECT DISTINCT c.profile_id, (c.occurred_at AT TIME ZONE p.time_zone)::date
        FROM old_rows c JOIN profiles p ON p.id = c.profile_id;
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER analytics_conversions_insert AFTER INSERT ON conversions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_mark_conversions()`
  yield* sql`
    CREATE TRIGGER analytics_conversions_update AFTER UPDATE ON conversions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_mark_conversions()`
  yield* sql`
    CREATE TRIGGER analytics_conversions_delete AFTER DELETE ON conversions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_mark_conversions()`
  // Credit rows: the day of their conversion (a conversion deleted with them is marked by its own trigger).
  yield* sql`
    CREATE FUNCTION analytics_mark_credits() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO analytics_dirty (profile_id, day)
        SELECT DISTINCT c.profile_id, (c.occurred_at AT TIME ZONE p.time_zone)::date
        FROM (SELECT DISTINCT conversion_id FROM new_rows) a
        JOIN conversions c ON c.id = a.conversion_id JOIN profiles p ON p.id = c.profile_id;
      END IF;
      IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO analytics_dirty (profile_id, day)
        SELECT DISTINCT c.profile_id, (c.occurred_at AT TIME ZONE p.time_zone)::date
        FROM (SELECT DISTINCT conversion_id FROM old_rows) a
        JOIN conversions c ON c.id = a.conversion_id JOIN profiles p ON p.id = c.profile_id;
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER analytics_credits_insert AFTER INSERT ON attribution_credits
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_mark_credits()`
  yield* sql`
    CREATE TRIGGER analytics_credits_update AFTER UPDATE ON attribution_credits
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_mark_credits()`
  yield* sql`
    CREATE TRIGGER analytics_credits_delete AFTER DELETE ON attribution_credits
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_mark_credits()`
  // Touches: their own day; an update that changes what a touch is counted under also marks the
  // days of the conversions credited to it (an identity move of customer_id alone marks nothing).
  yield* sql`
    CREATE FUNCTION analytics_mark_touches() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO analytics_dirty (profile_id, day)
        SELECT DISTINCT t.profile_id, (t.occurred_at AT TIME ZONE p.time_zone)::date
        FROM new_rows t JOIN profiles p ON p.id = t.profile_id;
      ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO analytics_dirty (profile_id, day)
        SELECT DISTINCT t.profile_id, (t.occurred_at AT TIME ZONE p.time_zone)::date
        FROM old_rows t JOIN profiles p ON p.id = t.profile_id;
      ELSE
        WITH changed AS (
          SELECT o.id, o.profile_id, o.occurred_at AS old_at, n.occurred_at AS new_at
          FROM old_rows o JOIN new_rows n ON n.id = o.id
          WHERE (o.occurred_at, o.kind, o.channel, o.campaign_external_id, o.ad_set_external_id, o.ad_external_id,
                 o.referrer_domain, o.path, o.payload -> 'utm' ->> 'utm_term', o.country, o.device, o.browser, o.os)
             IS DISTINCT FROM
                (n.occurred_at, n.kind, n.channel, n.campaign_external_id, n.ad_set_external_id, n.ad_external_id,
                 n.referrer_domain, n.path, n.payload -> 'utm' ->> 'utm_term', n.country, n.device, n.browser, n.os)
        )
        INSERT INTO analytics_dirty (profile_id, day)
        SELECT DISTINCT x.profile_id, x.day FROM (
          SELECT ch.profile_id, (ch.old_at AT TIME ZONE p.time_zone)::date AS day
          FROM changed ch JOIN profiles p ON p.id = ch.profile_id
          UNION ALL
          SELECT ch.profile_id, (ch.new_at AT TIME ZONE p.time_zone)::date
          FROM changed ch JOIN profiles p ON p.id = ch.profile_id
          UNION ALL
          SELECT c.profile_id, (c.occurred_at AT TIME ZONE p.time_zone)::date
          FROM changed ch JOIN attribution_credits a ON a.touch_id = ch.id
          JOIN conversions c ON c.id = a.conversion_id JOIN profiles p ON p.id = c.profile_id
        ) x;
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER analytics_touches_insert AFTER INSERT ON touches
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_mark_touches()`
  yield* sql`
    CREATE TRIGGER analytics_touches_update AFTER UPDATE ON touches
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_mark_touches()`
  yield* sql`
    CREATE TRIGGER analytics_touches_delete AFTER DELETE ON touches
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_mark_touches()`
  // A new time zone moves every day boundary: the whole profile is recomputed.
  yield* sql`
    CREATE FUNCTION analytics_mark_profile() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF OLD.time_zone IS DISTINCT FROM NEW.time_zone THEN
        INSERT INTO analytics_dirty (profile_id, day) VALUES (NEW.id, NULL);
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER analytics_profiles_time_zone AFTER UPDATE OF time_zone ON profiles
    FOR EACH ROW EXECUTE FUNCTION analytics_mark_profile()`
})
