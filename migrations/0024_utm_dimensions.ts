import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The UTM breakdown dimensions and `meta.as_of` (decision 0051).
 * - A touch update that changes a UTM tag changes what the touch counts under, so it marks its
 *   days like any other dimension change (the function of 0019 with the three tags added).
 * - Every profile with touches gets a whole-profile mark: the rollup job adds the new slices to
 *   past days in the background, and `meta.as_of` says so until it is done.
 * - `analytics_dirty (profile_id, marked_at)`: `as_of` is the profile's oldest mark, read by every
 *   rollup-backed request.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE OR REPLACE FUNCTION analytics_mark_touches() RETURNS trigger LANGUAGE plpgsql AS $$
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
                 o.referrer_domain, o.path, o.payload -> 'utm' ->> 'utm_term', o.country, o.device, o.browser, o.os,
                 o.payload -> 'utm' ->> 'utm_campaign', o.payload -> 'utm' ->> 'utm_source', o.payload -> 'utm' ->> 'utm_medium')
             IS DISTINCT FROM
                (n.occurred_at, n.kind, n.channel, n.campaign_external_id, n.ad_set_external_id, n.ad_external_id,
                 n.referrer_domain, n.path, n.payload -> 'utm' ->> 'utm_term', n.country, n.device, n.browser, n.os,
                 n.payload -> 'utm' ->> 'utm_campaign', n.payload -> 'utm' ->> 'utm_source', n.payload -> 'utm' ->> 'utm_medium')
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
  yield* sql`CREATE INDEX analytics_dirty_profile ON analytics_dirty (profile_id, marked_at)`
  yield* sql`
    INSERT INTO analytics_dirty (profile_id, day)
    SELECT p.id, NULL FROM profiles p WHERE EXISTS (SELECT 1 FROM touches t WHERE t.profile_id = p.id)`
})
