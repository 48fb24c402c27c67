/**
 * One owner per table (DESIGN.md, "Table ownership"): every table the migrations create has one
 * repository module, the only code in src/ and cluster/ that writes it. Other domains call it.
 * The check reads the migrations for the tables and the source for statements that write them
 * (INSERT, UPDATE, DELETE, COPY, ON CONFLICT); a statement whose table is interpolated counts as
 * a write of every table named in a string literal of that file.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { OUTCOME_KEYS } from "../../migrations/support/outcome-keys.ts"

const root = fileURLToPath(new URL("../../", import.meta.url))

/** Table → the module that owns it. `null`: nothing writes it yet; its writer must be added here first. */
export const OWNERS: Readonly<Record<string, string | null>> = {
  // tenancy
  workspaces: "src/accounts/workspaces/repo.ts",
  workspace_memberships: "src/accounts/workspaces/repo.ts",
  workspace_mcp_settings: "src/accounts/workspaces/repo.ts",
  profiles: "src/accounts/profiles/repo.ts",
  profile_memberships: "src/accounts/members/repo.ts",
  invitations: "src/accounts/members/repo.ts",
  entitlements: "src/accounts/entitlements/repo.ts",
  users: "src/accounts/people/repo.ts",
  password_links: "src/accounts/people/repo.ts",
  dpa_handoffs: "src/accounts/dpa/handoff/repo.ts",
  // auth and apps
  api_keys: "src/accounts/api-keys/repo.ts",
  sessions: "src/accounts/sessions/repo.ts",
  user_tokens: "src/accounts/user-tokens/repo.ts",
  oauth_apps: "src/accounts/admin/repo.ts",
  commerce_apps: "src/accounts/admin/repo.ts",
  grants: "src/accounts/admin/repo.ts",
  oauth_authorization_codes: "src/accounts/oauth/authorize/repo.ts",
  oauth_consent_tickets: "src/accounts/oauth/authorize/repo.ts",
  mcp_clients: "src/accounts/mcp-oauth/repo.ts",
  mcp_authorization_codes: "src/accounts/mcp-oauth/repo.ts",
  mcp_consent_tickets: "src/accounts/mcp-oauth/repo.ts",
  idempotency_keys: "src/http/idempotency-repo.ts",
  audit_events: "src/kernel/audit/repo.ts",
  pii_access_log: "src/kernel/audit/repo.ts",
  rpc_credentials: "src/rpc/credentials/repo.ts",
  // records
  touches: "src/attribution/touches/repo.ts",
  touch_keys: "src/attribution/touches/repo.ts",
  conversions: "src/attribution/conversions/repo.ts",
  credit_queue: "src/attribution/conversions/repo.ts",
  outcome_events: "src/attribution/conversions/repo.ts",
  outcome_keys: "src/attribution/conversions/repo.ts",
  outbox: "src/kernel/outbox/repo.ts",
  payment_actions: "src/ingestion/events/payments/repo.ts",
  conversion_definitions: "src/attribution/definitions/repo.ts",
  attribution_credits: "src/attribution/credits/repo.ts",
  work_jobs: "src/attribution/jobs/repo.ts",
  customers: "src/identity/customers/repo.ts",
  customer_identifiers: "src/identity/customers/repo.ts",
  customer_erasures: "src/identity/customers/repo.ts",
  identity_links: "src/identity/repo.ts",
  merge_proposals: "src/identity/repo.ts",
  customer_merges: "src/identity/repo.ts",
  declared_sources: "src/identity/declared-sources/repo.ts",
  audience_exclusions: "src/exports/audiences/repo.ts",
  experiments: "src/experiments/repo.ts",
  customer_list_audiences: "src/exports/audiences/repo.ts",
  conversation_leads: null,
  // tracking
  tracking_keys: "src/ingestion/tracking/tracker/repo.ts",
  tracking_settings: "src/ingestion/tracking/tracker/repo.ts",
  tracking_drops: "src/ingestion/tracking/tracker/repo.ts",
  tracking_domains: "src/ingestion/tracking/domains/repo.ts",
  tracking_verifications: "src/ingestion/tracking/diagnostics/repo.ts",
  // analytics
  ad_spend: "src/analytics/imports/repo.ts",
  fx_rates: "src/analytics/imports/repo.ts",
  analytics_dirty: "src/analytics/rollups/repo.ts",
  analytics_conversion_days: "src/analytics/rollups/repo.ts",
  analytics_credit_days: "src/analytics/rollups/repo.ts",
  analytics_touch_days: "src/analytics/rollups/repo.ts",
  analytics_campaign_days: "src/analytics/rollups/repo.ts",
  analytics_utm_scans: "src/analytics/insights/repo.ts",
  // creative analysis and recommendations
  creative_analysis_jobs: "src/analytics/creatives/repo.ts",
  recommendations: "src/ads/recommendations/repo.ts",
  // connections (written by provider sync, issue 17)
  connections: "src/connections/repo.ts",
  connect_handoffs: "src/connections/handoffs/repo.ts",
  pending_connections: "src/connections/handoffs/repo.ts",
  provider_events: "src/connections/hooks/repo.ts",
  sync_jobs: "src/ingestion/sync/repo.ts",
  commerce_products: "src/ingestion/commerce/orders/repo.ts",
  // inbox (issue 21, part 7)
  inbox_conversations: "src/messaging/inbox/repo.ts",
  inbox_messages: "src/messaging/inbox/repo.ts",
  inbox_drafts: "src/messaging/inbox/repo.ts",
  inbox_extraction_proposals: "src/messaging/inbox/repo.ts",
  inbox_backfills: "src/messaging/inbox/repo.ts",
  // channel health (issue 21, part 5)
  connection_health: "src/connections/health/repo.ts",
  commerce_orders: "src/ingestion/commerce/orders/repo.ts",
  commerce_order_milestones: "src/ingestion/commerce/orders/repo.ts",
  ad_campaigns: "src/ingestion/sync/structure-repo.ts",
  ad_sets: "src/ingestion/sync/structure-repo.ts",
  ads: "src/ingestion/sync/structure-repo.ts",
  // ad actions (issue 19)
  ad_actions: "src/ads/actions/repo.ts",
  conversion_exports: "src/exports/pipeline/repo.ts",
  // conversion sync (issue 20)
  conversion_sync_settings: "src/exports/catalog/repo.ts",
  export_destinations: "src/exports/destinations/repo.ts",
  export_rules: "src/exports/rules/repo.ts",
  export_deliveries: "src/exports/pipeline/repo.ts",
  export_sweep_cursors: "src/exports/pipeline/repo.ts",
  // webhooks
  webhook_subscriptions: "src/webhooks/subscriptions/repo.ts",
  webhook_deliveries: "src/webhooks/delivery/repo.ts",
  webhook_delivery_attempts: "src/webhooks/delivery/repo.ts",
  // reports
  reports: "src/analytics/reports/repo.ts",
  report_runs: "src/analytics/reports/repo.ts",
  platform_safe_datasets: "src/exports/platform-safe/repo.ts",
  platform_safe_rebuilds: "src/exports/platform-safe/repo.ts",
  data_source_datasets: "src/exports/data-sources/repo.ts",
  // the request log (decision 0130)
  request_logs: "src/ops/request-logs/repo.ts",
  // cluster
  profile_state: "cluster/profile-repo.ts"
}

const filesUnder = (dir: string): ReadonlyArray<string> =>
  readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name)
    return statSync(join(root, path)).isDirectory() ? filesUnder(path) : path.endsWith(".ts") ? [path] : []
  })

const migrationTables = (): ReadonlyArray<string> => {
  const tables = new Set<string>()
  for (const file of filesUnder("migrations")) {
    // A partition made by name (`CREATE TABLE x PARTITION OF t DEFAULT`) is its parent's rows, not a table of its own.
    const text = readFileSync(join(root, file), "utf8")
    for (const match of text.matchAll(/create\s+table\s+(?:if\s+not\s+exists\s+)?(?!if\b)([a-z_][a-z0-9_]*)\b(?!\s+partition\s+of)/gi)) {
      tables.add(match[1]!.toLowerCase())
    }
  }
  // Made under a name the support module is given (migration 0074).
  tables.add(OUTCOME_KEYS.keys)
  return [...tables].sort()
}

/** Comments go first: prose that says "update touches" is not a statement. */
const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1")

/** The tables a source file writes. */
export const tablesWrittenBy = (source: string, tables: ReadonlyArray<string>): ReadonlyArray<string> => {
  const text = withoutComments(source)
  const written = new Set<string>()
  for (const table of tables) {
    const statement = new RegExp(`\\b(?:insert\\s+into|update|delete\\s+from|copy|truncate)\\s+(?:only\\s+)?${table}\\b(?![.\\w])`, "i")
    if (statement.test(text)) written.add(table)
  }
  // A statement over an interpolated table name writes the tables the file names as literals.
  if (/\b(?:insert\s+into|update|delete\s+from|copy|truncate)\s+\$\{/i.test(text)) {
    for (const table of tables) {
      if (new RegExp(`["'\`]${table}["'\`]`).test(text)) written.add(table)
    }
  }
  return [...written]
}

describe("table ownership", () => {
  const tables = migrationTables()
  const sources = [...filesUnder("src"), ...filesUnder("cluster")]

  it("every table has an owner entry, and every owner entry is a table", () => {
    expect(tables.filter((table) => !(table in OWNERS))).toEqual([])
    expect(Object.keys(OWNERS).filter((table) => !tables.includes(table))).toEqual([])
  })

  it("only the owner writes a table", () => {
    const strays: Array<string> = []
    for (const file of sources) {
      const path = relative(root, join(root, file)).split("\\").join("/")
      for (const table of tablesWrittenBy(readFileSync(join(root, file), "utf8"), tables)) {
        if (OWNERS[table] !== path) strays.push(`${table} written by ${path} (owner: ${OWNERS[table] ?? "none yet"})`)
      }
    }
    expect(strays.sort()).toEqual([])
  })

  it("the check sees the statement forms it looks for", () => {
    const some = ["touches", "api_keys", "analytics_credit_days"]
    expect(tablesWrittenBy("sql`INSERT INTO touches (id) VALUES (1)`", some)).toEqual(["touches"])
    expect(tablesWrittenBy("sql`update api_keys set revoked_at = now()`", some)).toEqual(["api_keys"])
    expect(tablesWrittenBy("sql`DELETE FROM touches WHERE id = 1`", some)).toEqual(["touches"])
    expect(tablesWrittenBy("sql`SELECT * FROM touches`", some)).toEqual([])
    expect(tablesWrittenBy("// update touches later\nconst a = 1", some)).toEqual([])
    expect(tablesWrittenBy("insertRows(\"analytics_credit_days\"); sql`INSERT INTO ${sql(table)}`", some))
      .toEqual(["analytics_credit_days"])
  })
})
