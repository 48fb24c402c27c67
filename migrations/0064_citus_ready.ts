import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * A schema Citus can distribute by `profile_id` (issue 35, part 4; docs/scaling.md):
 *
 * - reference tables (read across profiles: the account plane, credentials found by their digest,
 *   connections found by a provider's account, fx rates) and coordinator-local tables say so in a
 *   table comment, `reference: ...` or `local: ...`;
 * - every other table is distributed: it carries `profile_id` (added here, backfilled from the
 *   parent row, where a tenant table lacked it) and has it in its primary key, its unique
 *   constraints and unique indexes, and in every foreign key to another distributed table, so no
 *   constraint checks or joins rows of two profiles.
 *
 * `profile_id` is appended (`(id, profile_id)`), not put first: Citus only needs the column in the
 * key, and the existing leading columns keep serving the lookups by id that the queries make.
 * The keys are rewritten from the catalogue (whatever shape an earlier migration left) in one
 * transaction; a rewrite is an index build per key, seconds at the sizes the tests and benches use.
 */

/** Read across profiles or before a profile is known: replicated to every Citus node. */
const REFERENCE: Readonly<Record<string, string>> = {
  workspaces: "the account plane: a workspace spans its profiles",
  workspace_memberships: "the account plane: a user's workspaces",
  workspace_mcp_settings: "the account plane: per workspace",
  users: "the account plane: a user spans workspaces and profiles",
  sessions: "a session is found by its secret's digest before any profile is known",
  user_tokens: "a token is found by its secret's digest before any profile is known",
  password_links: "a link is found by its token's digest",
  invitations: "a workspace invitation, found by its token",
  profiles: "the tenant list itself: every distributed table's foreign key to profiles points here",
  profile_memberships: "a user's profiles are listed across profiles",
  oauth_apps: "apps are global; found by client id",
  commerce_apps: "apps are global; found by shop",
  grants: "an app's grants are listed across profiles; api_keys point here",
  api_keys: "a key is found by its secret's digest before any profile is known",
  oauth_authorization_codes: "a code is found by its digest at the token exchange",
  oauth_consent_tickets: "a ticket is found by its digest",
  mcp_clients: "MCP clients are global",
  mcp_authorization_codes: "a code is found by its digest at the token exchange",
  mcp_consent_tickets: "a ticket is found by its digest",
  rpc_credentials: "a runner credential is found by its digest",
  fx_rates: "currency rates, shared by every profile",
  tracking_keys: "the tracker's public key is looked up on every hit before the profile is known",
  tracking_domains: "a hostname is looked up on every hit before the profile is known; unique across profiles",
  connections: "a provider callback finds its connection by provider account or commerce app, across profiles",
  connect_handoffs: "a provider redirect finds its handoff by handle or state digest",
  pending_connections: "belongs to a connect handoff (reference)",
  provider_events: "provider event ids deduplicated before the event is routed to a connection or profile",
  dpa_handoffs: "a handoff is found by its token's digest"
}

/** Neither distributed nor replicated: plain tables on the Citus coordinator. */
const LOCAL: Readonly<Record<string, string>> = {
  svc_migrations: "the migration ledger of this database",
  idempotency_keys: "keyed by credential scope, route and key (not always a profile); read and written on its own",
  audit_events: "workspace- and profile-level actions (profile_id may be null); an append-only trail read per workspace",
  pii_access_log: "workspace- and profile-level reads (profile_id may be null); an append-only trail read per workspace"
}

/** Tenant tables without profile_id: the parent row that gives it. */
const BACKFILL: ReadonlyArray<{ readonly table: string; readonly column: string; readonly parent: string }> = [
  { table: "attribution_credits", column: "conversion_id", parent: "conversions" },
  { table: "export_sweep_cursors", column: "rule_id", parent: "export_rules" },
  { table: "inbox_backfills", column: "connection_id", parent: "connections" },
  { table: "webhook_delivery_attempts", column: "delivery_id", parent: "webhook_deliveries" }
]

const quoted = (name: string) => `"${name.replaceAll("\"", "\"\"")}"`
const columns = (names: ReadonlyArray<string>) => names.map(quoted).join(", ")

export default Effect.gen(function*() {
  const sql = yield* SqlClient
  for (const [table, why] of Object.entries(REFERENCE)) {
    yield* sql.unsafe(`COMMENT ON TABLE ${quoted(table)} IS 'reference: ${why.replaceAll("'", "''")}'`)
  }
  for (const [table, why] of Object.entries(LOCAL)) {
    yield* sql.unsafe(`COMMENT ON TABLE ${quoted(table)} IS 'local: ${why.replaceAll("'", "''")}'`)
  }
  for (const { column, parent, table } of BACKFILL) {
    yield* sql.unsafe(`ALTER TABLE ${quoted(table)} ADD COLUMN profile_id uuid`)
    yield* sql.unsafe(
      `UPDATE ${quoted(table)} t SET profile_id = p.profile_id FROM ${quoted(parent)} p WHERE p.id = t.${quoted(column)}`
    )
    // A row whose parent is gone (no foreign key kept it, e.g. a deleted connection's backfill mark) is read by nothing.
    yield* sql.unsafe(`DELETE FROM ${quoted(table)} WHERE profile_id IS NULL`)
    yield* sql.unsafe(`ALTER TABLE ${quoted(table)} ALTER COLUMN profile_id SET NOT NULL`)
  }

  // Distributed: every table with profile_id that is neither reference nor local.
  const distributed = new Set(
    (yield* sql<{ readonly name: string }>`
      SELECT c.relname AS name FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'profile_id' AND NOT a.attisdropped
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        AND COALESCE(obj_description(c.oid, 'pg_class'), '') !~ '^(reference|local):'`).map((row) => row.name)
  )

  // Keys and unique indexes of distributed tables without profile_id, and the foreign keys between
  // distributed tables without it (dropped first: they depend on the keys they point at).
  const constraints = yield* sql<{
    readonly tbl: string
    readonly name: string
    readonly type: string
    readonly cols: ReadonlyArray<string>
    readonly ref_table: string | null
    readonly ref_cols: ReadonlyArray<string> | null
    readonly actions: string
  }>`
    SELECT t.relname AS tbl, k.conname AS name, k.contype::text AS type,
      ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY u(n, i)
            JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.i) AS cols,
      r.relname AS ref_table,
      CASE WHEN k.contype = 'f' THEN ARRAY(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY u(n, i)
            JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n ORDER BY u.i) END AS ref_cols,
      CASE WHEN k.contype = 'f' THEN
        'ON UPDATE ' || CASE k.confupdtype WHEN 'c' THEN 'CASCADE' WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END ||
        ' ON DELETE ' || CASE k.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END
      ELSE '' END AS actions
    FROM pg_constraint k
    JOIN pg_class t ON t.oid = k.conrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    LEFT JOIN pg_class r ON r.oid = k.confrelid
    WHERE n.nspname = current_schema() AND k.contype IN ('p', 'u', 'f') AND k.conparentid = 0
    ORDER BY t.relname, k.conname`
  const actionsOf = (actions: string) => {
    // No foreign key here sets null or a default: rewriting one would also clear profile_id.
    if (/SET NULL|SET DEFAULT/.test(actions)) return Effect.die(new Error(`unexpected foreign key action ${actions}`))
    return Effect.succeed(actions)
  }
  const foreign = constraints.filter((k) =>
    k.type === "f" && distributed.has(k.tbl) && k.ref_table !== null && distributed.has(k.ref_table) &&
    !k.cols.includes("profile_id")
  )
  for (const k of foreign) yield* sql.unsafe(`ALTER TABLE ${quoted(k.tbl)} DROP CONSTRAINT ${quoted(k.name)}`)

  for (const k of constraints) {
    if ((k.type !== "p" && k.type !== "u") || !distributed.has(k.tbl) || k.cols.includes("profile_id")) continue
    const kind = k.type === "p" ? "PRIMARY KEY" : "UNIQUE"
    yield* sql.unsafe(`ALTER TABLE ${quoted(k.tbl)} DROP CONSTRAINT ${quoted(k.name)}`)
    yield* sql.unsafe(
      `ALTER TABLE ${quoted(k.tbl)} ADD CONSTRAINT ${quoted(k.name)} ${kind} (${columns([...k.cols, "profile_id"])})`
    )
  }

  // Unique indexes that are not constraints (partial ones): rebuilt with profile_id, same predicate.
  const indexes = yield* sql<{
    readonly tbl: string
    readonly name: string
    readonly cols: ReadonlyArray<string>
    readonly expressions: boolean
    readonly predicate: string | null
  }>`
    SELECT t.relname AS tbl, x.relname AS name,
      ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) WITH ORDINALITY u(n, o)
            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.n ORDER BY u.o) AS cols,
      i.indexprs IS NOT NULL AS expressions,
      pg_get_expr(i.indpred, i.indrelid) AS predicate
    FROM pg_index i
    JOIN pg_class t ON t.oid = i.indrelid
    JOIN pg_class x ON x.oid = i.indexrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = current_schema() AND i.indisunique
      AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.conrelid = i.indrelid)
    ORDER BY t.relname, x.relname`
  for (const index of indexes) {
    if (!distributed.has(index.tbl) || index.cols.includes("profile_id")) continue
    if (index.expressions) return yield* Effect.die(new Error(`unique index ${index.name} has expressions`))
    yield* sql.unsafe(`DROP INDEX ${quoted(index.name)}`)
    yield* sql.unsafe(
      `CREATE UNIQUE INDEX ${quoted(index.name)} ON ${quoted(index.tbl)} (${columns([...index.cols, "profile_id"])})` +
        (index.predicate === null ? "" : ` WHERE ${index.predicate}`)
    )
  }

  for (const k of foreign) {
    const actions = yield* actionsOf(k.actions)
    yield* sql.unsafe(
      `ALTER TABLE ${quoted(k.tbl)} ADD CONSTRAINT ${quoted(k.name)} FOREIGN KEY (${columns([...k.cols, "profile_id"])}) ` +
        `REFERENCES ${quoted(k.ref_table ?? "")} (${columns([...(k.ref_cols ?? []), "profile_id"])}) ${actions}`
    )
  }
})
