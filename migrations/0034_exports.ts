import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Conversion sync (issue 20 parts 1-3, decisions 0073-0075): the catalog's `privacy_config`,
 * export destinations and rules, the export queue (`conversion_exports`, taken over from 0010:
 * one row per (outcome, destination), its stable dedup event id and lease) and the delivery
 * ledger (one row per attempt decision).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  // privacy_mode and platform_safe_target stay on profiles; only the composed config lives here.
  yield* sql`
    CREATE TABLE conversion_sync_settings (
      profile_id uuid PRIMARY KEY REFERENCES profiles (id),
      privacy_config jsonb,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE export_destinations (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      kind text NOT NULL CHECK (kind IN ('adplatform_capi', 'adplatform_capi_messaging')),
      connection_id uuid NOT NULL REFERENCES connections (id),
      dataset_id text NOT NULL,
      name text NOT NULL,
      clean_dataset boolean NOT NULL DEFAULT false,
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    )`
  // Two live destinations never send the same lane to the same dataset (409 destination_conflict).
  yield* sql`
    CREATE UNIQUE INDEX export_destinations_match ON export_destinations (profile_id, kind, dataset_id)
    WHERE deleted_at IS NULL`
  yield* sql`
    CREATE TABLE export_rules (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      conversion_key text NOT NULL,
      destination_ids uuid[],
      platform_event_name_overrides jsonb NOT NULL DEFAULT '{}'::jsonb,
      enabled boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (profile_id, conversion_key)
    )`
  // The export sweep reads recent conversions per rule (profile, conversion key) by arrival.
  yield* sql`CREATE INDEX conversions_export_sweep ON conversions (profile_id, conversion_key, created_at)`
  yield* sql`ALTER TABLE conversion_exports ADD COLUMN destination_id uuid REFERENCES export_destinations (id)`
  yield* sql`ALTER TABLE conversion_exports ADD COLUMN rule_id uuid REFERENCES export_rules (id)`
  yield* sql`ALTER TABLE conversion_exports ADD COLUMN event_id text`
  yield* sql`ALTER TABLE conversion_exports ADD COLUMN attempts integer NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE conversion_exports ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now()`
  yield* sql`ALTER TABLE conversion_exports ADD COLUMN lease_until timestamptz`
  yield* sql`ALTER TABLE conversion_exports ADD COLUMN lease_token uuid`
  yield* sql`ALTER TABLE conversion_exports ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now()`
  yield* sql`CREATE UNIQUE INDEX conversion_exports_pair ON conversion_exports (outcome_event_id, destination_id)`
  yield* sql`
    CREATE INDEX conversion_exports_due ON conversion_exports (next_attempt_at)
    WHERE status IN ('pending', 'held') AND destination_id IS NOT NULL`
  yield* sql`
    CREATE TABLE export_deliveries (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      export_id uuid REFERENCES conversion_exports (id),
      destination_id uuid REFERENCES export_destinations (id),
      outcome_event_id uuid,
      event_id text,
      attempt integer NOT NULL,
      decision text NOT NULL CHECK (decision IN ('delivered', 'retrying', 'failed', 'held', 'skipped', 'suppressed')),
      action_source text,
      skip_reason text,
      routing text,
      event_name text,
      provider_status integer,
      error_code text,
      is_test boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX export_deliveries_page ON export_deliveries (profile_id, created_at DESC, id DESC)`
})
