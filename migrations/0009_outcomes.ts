import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Outcomes and touches: customers (by the sender's `external_id`, with their identifiers),
 * conversion definitions, server-side outcome events and the conversions they become, touches
 * of every kind, credit rows per model, the transactional outbox (`outcome.recorded`) and the
 * durable work queue (recomputes and replays). Money is `numeric`, never a binary float.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE customers (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      customer_key text,
      first_name text,
      last_name text,
      created_at timestamptz NOT NULL DEFAULT now(),
      merged_into_id uuid REFERENCES customers (id),
      erased_at timestamptz
    )`
  yield* sql`
    CREATE UNIQUE INDEX customers_live_key ON customers (profile_id, customer_key)
    WHERE customer_key IS NOT NULL AND merged_into_id IS NULL AND erased_at IS NULL`
  // An identifier may be bound to two customers (identity raises a merge proposal, never merges silently).
  yield* sql`
    CREATE TABLE customer_identifiers (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      customer_id uuid NOT NULL REFERENCES customers (id),
      kind text NOT NULL CHECK (kind IN ('anonymous_id', 'email', 'phone', 'crm_contact_id', 'national_id', 'external_id')),
      value text NOT NULL,
      is_primary boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      removed_at timestamptz
    )`
  yield* sql`CREATE INDEX customer_identifiers_value ON customer_identifiers (profile_id, kind, value) WHERE removed_at IS NULL`
  yield* sql`CREATE INDEX customer_identifiers_customer ON customer_identifiers (customer_id)`
  yield* sql`
    CREATE TABLE conversion_definitions (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      conversion_key text NOT NULL,
      name text NOT NULL,
      kind text NOT NULL DEFAULT 'event' CHECK (kind IN ('event', 'pipeline_stage')),
      event_names text[] NOT NULL DEFAULT '{}',
      event_key text,
      lookback_window_days integer NOT NULL DEFAULT 30 CHECK (lookback_window_days BETWEEN 1 AND 365),
      is_default boolean NOT NULL DEFAULT false,
      counts_as_cash boolean NOT NULL DEFAULT false,
      attribution_eligible boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (profile_id, conversion_key)
    )`
  yield* sql`CREATE UNIQUE INDEX conversion_definitions_one_default ON conversion_definitions (profile_id) WHERE is_default`
  yield* sql`
    CREATE TABLE outcome_events (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      idempotency_key text NOT NULL,
      request_hash text NOT NULL,
      source text NOT NULL DEFAULT 'api',
      event_name text NOT NULL,
      occurred_at timestamptz NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now(),
      value_amount numeric(20, 6),
      currency text CHECK (currency ~ '^[A-Z]{3}$'),
      subject_ref text,
      customer_id uuid REFERENCES customers (id),
      action_source text,
      click_ids jsonb NOT NULL DEFAULT '{}'::jsonb,
      retracted_at timestamptz,
      retraction_reason text,
      UNIQUE (profile_id, idempotency_key)
    )`
  yield* sql`CREATE INDEX outcome_events_customer ON outcome_events (customer_id) WHERE customer_id IS NOT NULL`
  yield* sql`
    CREATE TABLE conversions (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      outcome_event_id uuid NOT NULL UNIQUE REFERENCES outcome_events (id),
      definition_id uuid REFERENCES conversion_definitions (id),
      conversion_key text NOT NULL,
      occurred_at timestamptz NOT NULL,
      value_amount numeric(20, 6),
      currency text,
      customer_id uuid REFERENCES customers (id),
      subject_ref text,
      counts_as_cash boolean NOT NULL,
      attribution_eligible boolean NOT NULL,
      is_first_payment boolean,
      created_at timestamptz NOT NULL DEFAULT now(),
      -- Set by the attribution worker once credit rows exist for every model; null = waiting.
      credited_at timestamptz
    )`
  yield* sql`CREATE INDEX conversions_profile_time ON conversions (profile_id, occurred_at DESC, id DESC)`
  yield* sql`CREATE INDEX conversions_customer ON conversions (customer_id, occurred_at) WHERE customer_id IS NOT NULL`
  yield* sql`CREATE INDEX conversions_uncredited ON conversions (created_at) WHERE credited_at IS NULL`
  yield* sql`
    CREATE TABLE touches (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      kind text NOT NULL CHECK (kind IN ('web_touch', 'synthetic', 'organic_interaction', 'inherited', 'proxy_click', 'outcome')),
      occurred_at timestamptz NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now(),
      source_system text NOT NULL DEFAULT 'tracker',
      idempotency_key text,
      event_type text,
      anonymous_id text,
      session_id text,
      customer_id uuid REFERENCES customers (id),
      join_method text CHECK (join_method IN ('ctwa_referral', 'click_id', 'link_token', 'anonymous_id')),
      channel text NOT NULL,
      source text,
      medium text,
      campaign_external_id text,
      campaign_name text,
      ad_set_external_id text,
      ad_set_name text,
      ad_external_id text,
      ad_name text,
      click_id_kind text,
      click_id text,
      url text,
      path text,
      referrer_domain text,
      device text,
      browser text,
      os text,
      country text,
      city text,
      payload jsonb NOT NULL DEFAULT '{}'::jsonb
    )`
  yield* sql`CREATE INDEX touches_profile_time ON touches (profile_id, occurred_at)`
  yield* sql`CREATE INDEX touches_anonymous ON touches (profile_id, anonymous_id, occurred_at) WHERE anonymous_id IS NOT NULL`
  yield* sql`CREATE INDEX touches_customer ON touches (customer_id, occurred_at) WHERE customer_id IS NOT NULL`
  yield* sql`CREATE UNIQUE INDEX touches_idempotency ON touches (profile_id, source_system, idempotency_key) WHERE idempotency_key IS NOT NULL`
  yield* sql`
    CREATE TABLE attribution_credits (
      conversion_id uuid NOT NULL REFERENCES conversions (id) ON DELETE CASCADE,
      model text NOT NULL CHECK (model IN ('last_touch', 'first_touch', 'last_non_direct', 'linear', 'time_decay', 'svc_model')),
      touch_id uuid NOT NULL REFERENCES touches (id) ON DELETE CASCADE,
      position integer NOT NULL,
      credit_share numeric(12, 10) NOT NULL CHECK (credit_share >= 0 AND credit_share <= 1),
      is_credited boolean NOT NULL,
      in_window boolean NOT NULL,
      PRIMARY KEY (conversion_id, model, touch_id)
    )`
  yield* sql`CREATE INDEX attribution_credits_touch ON attribution_credits (touch_id)`
  yield* sql`
    CREATE TABLE outbox (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      topic text NOT NULL,
      payload jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      published_at timestamptz
    )`
  yield* sql`CREATE INDEX outbox_unpublished ON outbox (created_at) WHERE published_at IS NULL`
  yield* sql`
    CREATE TABLE work_jobs (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      kind text NOT NULL,
      reason text NOT NULL,
      state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'succeeded', 'failed')),
      progress integer NOT NULL DEFAULT 0,
      total integer,
      attempts integer NOT NULL DEFAULT 0,
      error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz,
      lease_until timestamptz
    )`
  yield* sql`CREATE INDEX work_jobs_pending ON work_jobs (created_at) WHERE state IN ('queued', 'running')`
  yield* sql`CREATE INDEX work_jobs_profile ON work_jobs (profile_id, created_at DESC)`
})
