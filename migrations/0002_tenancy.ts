import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Tenancy and credentials: workspaces, profiles, people and their memberships, OAuth apps
 * and their grants, API keys, user tokens, sessions, the audit trail and the PII access log.
 * Secrets are stored as SHA-256 digests (high-entropy keys and tokens) or encrypted (the
 * apps' JWT signing secrets, which must be read back to verify signatures).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE oauth_apps (
      id uuid PRIMARY KEY,
      name text NOT NULL,
      client_id text NOT NULL UNIQUE,
      client_secret_hash text NOT NULL,
      jwt_secret_encrypted text NOT NULL,
      redirect_uris text[] NOT NULL DEFAULT '{}',
      allowed_return_origins text[] NOT NULL DEFAULT '{}',
      profile_resolution text NOT NULL DEFAULT 'email' CHECK (profile_resolution IN ('email', 'external_ref')),
      rate_tier text NOT NULL DEFAULT 'standard' CHECK (rate_tier IN ('standard', 'elevated', 'internal')),
      owner_workspace_id uuid,
      dpa_status text NOT NULL DEFAULT 'not_accepted' CHECK (dpa_status IN ('not_accepted', 'accepted', 'withdrawn')),
      dpa_version text,
      dpa_accepted_at timestamptz,
      dpa_accepted_by text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    )`
  yield* sql`
    CREATE TABLE commerce_apps (
      id uuid PRIMARY KEY,
      shop text NOT NULL,
      name text NOT NULL,
      client_id text NOT NULL,
      client_secret_encrypted text NOT NULL,
      scopes text[] NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now(),
      disabled_at timestamptz
    )`
  yield* sql`CREATE UNIQUE INDEX commerce_apps_live_shop ON commerce_apps (shop) WHERE disabled_at IS NULL`
  yield* sql`
    CREATE TABLE workspaces (
      id uuid PRIMARY KEY,
      name text NOT NULL DEFAULT '',
      reporting_currency text CHECK (reporting_currency ~ '^[A-Z]{3}$'),
      is_healthcare_agency boolean NOT NULL DEFAULT false,
      created_by_app_id uuid REFERENCES oauth_apps (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      archived_at timestamptz
    )`
  yield* sql`
    CREATE TABLE profiles (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES workspaces (id),
      name text NOT NULL DEFAULT '',
      email text,
      currency text CHECK (currency ~ '^[A-Z]{3}$'),
      time_zone text NOT NULL DEFAULT 'UTC',
      external_ref text,
      provisioned_by_app_id uuid REFERENCES oauth_apps (id),
      provisioned_external_ref text,
      scopes text[] NOT NULL DEFAULT '{connections}',
      privacy_mode text NOT NULL DEFAULT 'standard' CHECK (privacy_mode IN ('standard', 'platform_safe', 'hipaa', 'custom')),
      platform_safe_target text NOT NULL DEFAULT 'existing' CHECK (platform_safe_target IN ('existing', 'clean')),
      dpa_status text NOT NULL DEFAULT 'not_accepted' CHECK (dpa_status IN ('not_accepted', 'accepted', 'withdrawn')),
      dpa_version text,
      dpa_accepted_at timestamptz,
      dpa_accepted_by text,
      created_at timestamptz NOT NULL DEFAULT now(),
      archived_at timestamptz
    )`
  yield* sql`CREATE INDEX profiles_workspace ON profiles (workspace_id)`
  yield* sql`
    CREATE UNIQUE INDEX profiles_app_external_ref ON profiles (provisioned_by_app_id, external_ref)
    WHERE external_ref IS NOT NULL AND archived_at IS NULL`
  yield* sql`
    CREATE TABLE entitlements (
      profile_id uuid NOT NULL REFERENCES profiles (id),
      feature text NOT NULL CHECK (feature IN ('svc_attribution')),
      enabled boolean NOT NULL DEFAULT false,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (profile_id, feature)
    )`
  yield* sql`
    CREATE TABLE users (
      id uuid PRIMARY KEY,
      email text NOT NULL,
      first_name text,
      last_name text,
      password_hash text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX users_email ON users (lower(email))`
  yield* sql`
    CREATE TABLE workspace_memberships (
      workspace_id uuid NOT NULL REFERENCES workspaces (id),
      user_id uuid NOT NULL REFERENCES users (id),
      role text NOT NULL CHECK (role IN ('owner', 'admin', 'analyst', 'guest')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      removed_at timestamptz,
      PRIMARY KEY (workspace_id, user_id)
    )`
  yield* sql`
    CREATE TABLE profile_memberships (
      profile_id uuid NOT NULL REFERENCES profiles (id),
      user_id uuid NOT NULL REFERENCES users (id),
      role text NOT NULL CHECK (role IN ('viewer', 'manager')),
      permissions text[],
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      removed_at timestamptz,
      PRIMARY KEY (profile_id, user_id)
    )`
  yield* sql`
    CREATE TABLE invitations (
      id uuid PRIMARY KEY,
      workspace_id uuid NOT NULL REFERENCES workspaces (id),
      email text NOT NULL,
      role text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz
    )`
  yield* sql`
    CREATE TABLE grants (
      id uuid PRIMARY KEY,
      app_id uuid NOT NULL REFERENCES oauth_apps (id),
      profile_id uuid NOT NULL REFERENCES profiles (id),
      connect_scopes text[] NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz
    )`
  yield* sql`CREATE UNIQUE INDEX grants_app_profile ON grants (app_id, profile_id)`
  yield* sql`
    CREATE TABLE api_keys (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      workspace_id uuid NOT NULL REFERENCES workspaces (id),
      name text NOT NULL DEFAULT '',
      prefix text NOT NULL,
      secret_hash text NOT NULL UNIQUE,
      scopes text[] NOT NULL,
      rate_limit_per_minute integer NOT NULL DEFAULT 60 CHECK (rate_limit_per_minute > 0),
      oauth_app_id uuid REFERENCES oauth_apps (id),
      grant_id uuid REFERENCES grants (id),
      created_by_user_id uuid REFERENCES users (id),
      rotated_from_id uuid REFERENCES api_keys (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz,
      revoked_at timestamptz,
      last_used_at timestamptz
    )`
  yield* sql`CREATE INDEX api_keys_profile ON api_keys (profile_id)`
  yield* sql`CREATE INDEX api_keys_workspace ON api_keys (workspace_id)`
  yield* sql`
    CREATE TABLE user_tokens (
      id uuid PRIMARY KEY,
      user_id uuid NOT NULL REFERENCES users (id),
      prefix text NOT NULL,
      secret_hash text NOT NULL UNIQUE,
      grants text[] NOT NULL,
      rate_limit_units_per_minute integer NOT NULL DEFAULT 120 CHECK (rate_limit_units_per_minute > 0),
      mcp_client_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz,
      revoked_at timestamptz
    )`
  yield* sql`
    CREATE TABLE sessions (
      id uuid PRIMARY KEY,
      user_id uuid NOT NULL REFERENCES users (id),
      secret_hash text NOT NULL UNIQUE,
      csrf_token_hash text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      revoked_at timestamptz
    )`
  yield* sql`
    CREATE TABLE workspace_mcp_settings (
      workspace_id uuid PRIMARY KEY REFERENCES workspaces (id),
      pii_mode text NOT NULL DEFAULT 'redacted',
      mcp_writeback_enabled boolean NOT NULL DEFAULT false,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE audit_events (
      id uuid PRIMARY KEY,
      occurred_at timestamptz NOT NULL DEFAULT now(),
      workspace_id uuid,
      profile_id uuid,
      actor_kind text NOT NULL,
      actor_id text,
      actor_user_id uuid,
      action text NOT NULL,
      target_kind text,
      target_id text,
      details jsonb NOT NULL DEFAULT '{}'::jsonb,
      request_id text
    )`
  yield* sql`CREATE INDEX audit_events_profile ON audit_events (profile_id, occurred_at)`
  yield* sql`CREATE INDEX audit_events_workspace ON audit_events (workspace_id, occurred_at)`
  yield* sql`
    CREATE TABLE pii_access_log (
      id uuid PRIMARY KEY,
      occurred_at timestamptz NOT NULL DEFAULT now(),
      workspace_id uuid NOT NULL,
      profile_id uuid,
      actor_kind text NOT NULL,
      actor_id text,
      route text NOT NULL,
      result text NOT NULL,
      request_id text
    )`
  yield* sql`CREATE INDEX pii_access_log_workspace ON pii_access_log (workspace_id, occurred_at)`
})
