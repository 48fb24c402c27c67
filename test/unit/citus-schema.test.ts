/**
 * The schema Citus can distribute by `profile_id` (issue 35, part 4; docs/scaling.md), read from
 * the migrated catalogue (PostgreSQL or the embedded database, whichever the run uses). Every table is
 *
 * - reference: its comment starts `reference:` (read across profiles; replicated to every node);
 * - local: its comment starts `local:` with why (a plain table on the coordinator);
 * - cluster runtime: `cluster_*`, created at run time by @effect/cluster's SQL storage, not by a
 *   migration (local on the coordinator too; docs/scaling.md says why);
 * - distributed: it has `profile_id` and no such comment.
 *
 * Rules (what Citus requires of tables distributed and co-located on one column): a table is one of
 * these; a distributed table has profile_id in its primary key and in every unique constraint and
 * unique index; a foreign key between two distributed tables includes profile_id on both sides, paired;
 * no reference or local table has a foreign key to a distributed one.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { readFileSync } from "node:fs"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { AppConfig } from "../../src/platform/config.ts"
import { testSettings } from "../support/app.ts"

type Kind = "distributed" | "reference" | "local" | "cluster"

interface Table {
  readonly name: string
  readonly kind: Kind | null
}

interface Schema {
  readonly tables: ReadonlyArray<Table>
  readonly violations: ReadonlyArray<string>
}

const kindOf = (name: string, hasProfile: boolean, comment: string | null): Kind | null => {
  if (comment?.startsWith("reference:")) return "reference"
  if (comment?.startsWith("local:")) return "local"
  if (name.startsWith("cluster_")) return "cluster"
  return hasProfile ? "distributed" : null
}

/** Reads the catalogue of the current schema and checks every table against the rules. */
const readSchema = Effect.gen(function*() {
  const sql = yield* SqlClient
  const rows = yield* sql<{ readonly name: string; readonly has_profile: boolean; readonly comment: string | null }>`
    SELECT c.relname AS name,
      EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'profile_id' AND NOT a.attisdropped) AS has_profile,
      obj_description(c.oid, 'pg_class') AS comment
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
    ORDER BY c.relname`
  const tables = rows.map((row) => ({ name: row.name, kind: kindOf(row.name, row.has_profile, row.comment) }))
  const kinds = new Map(tables.map((table) => [table.name, table.kind]))
  const violations: Array<string> = []
  for (const table of tables) {
    if (table.kind === null) violations.push(`${table.name}: no profile_id and no reference/local comment`)
  }

  // Keys and unique indexes (constraint-backed or not) of distributed tables; a primary key must exist.
  const uniques = yield* sql<{ readonly tbl: string; readonly name: string; readonly is_primary: boolean; readonly has_profile: boolean }>`
    SELECT t.relname AS tbl, x.relname AS name, i.indisprimary AS is_primary,
      EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = t.oid AND a.attname = 'profile_id'
              AND a.attnum = ANY (i.indkey::int2[])) AS has_profile
    FROM pg_index i
    JOIN pg_class t ON t.oid = i.indrelid
    JOIN pg_class x ON x.oid = i.indexrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = current_schema() AND i.indisunique AND NOT t.relispartition
    ORDER BY t.relname, x.relname`
  for (const table of tables) {
    if (table.kind !== "distributed") continue
    const own = uniques.filter((index) => index.tbl === table.name)
    if (!own.some((index) => index.is_primary)) violations.push(`${table.name}: distributed without a primary key`)
    for (const index of own) {
      if (!index.has_profile) {
        violations.push(`${table.name}: ${index.is_primary ? "primary key" : "unique index"} ${index.name} lacks profile_id`)
      }
    }
  }

  // Foreign keys: profile_id paired with profile_id between distributed tables; none into one from elsewhere.
  const foreign = yield* sql<{ readonly tbl: string; readonly name: string; readonly ref: string; readonly paired: boolean }>`
    SELECT t.relname AS tbl, k.conname AS name, r.relname AS ref,
      EXISTS (SELECT 1 FROM unnest(k.conkey, k.confkey) AS p(own, other)
              JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = p.own
              JOIN pg_attribute b ON b.attrelid = k.confrelid AND b.attnum = p.other
              WHERE a.attname = 'profile_id' AND b.attname = 'profile_id') AS paired
    FROM pg_constraint k
    JOIN pg_class t ON t.oid = k.conrelid
    JOIN pg_class r ON r.oid = k.confrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = current_schema() AND k.contype = 'f' AND k.conparentid = 0
    ORDER BY t.relname, k.conname`
  for (const key of foreign) {
    const own = kinds.get(key.tbl)
    if (kinds.get(key.ref) !== "distributed") continue
    if (own !== "distributed") violations.push(`${key.tbl}: ${own ?? "unclassified"} table's foreign key ${key.name} points at distributed ${key.ref}`)
    else if (!key.paired) violations.push(`${key.tbl}: foreign key ${key.name} to ${key.ref} does not pair profile_id with profile_id`)
  }
  return { tables, violations } satisfies Schema
})

/** The class docs/scaling.md gives each table (its table of `| \`name\` | class | why |` rows). */
const documented = () => {
  const text = readFileSync(new URL("../../docs/scaling.md", import.meta.url), "utf8")
  const classes = new Map<string, string>()
  for (const match of text.matchAll(/^\| `([a-z_]+)` \| (distributed|reference|local) \|/gm)) {
    if (match[1] !== undefined && match[2] !== undefined) classes.set(match[1], match[2])
  }
  return classes
}

/** Rolls back what `effect` did: the transaction fails on purpose once the result is in hand. */
class RolledBack {
  readonly _tag = "RolledBack"
  readonly schema: Schema
  constructor(schema: Schema) {
    this.schema = schema
  }
}

const database = DatabaseLayer.pipe(Layer.provide(AppConfig.layerWith(testSettings())))

layer(database, { timeout: "120 seconds" })("the schema Citus can distribute by profile_id", (it) => {
  it.effect("every table is distributed, reference or local, and the distributed ones keep to the rules", () =>
    Effect.gen(function*() {
      const schema = yield* readSchema
      assert.deepStrictEqual(schema.violations, [])
      const count = (kind: Kind) => schema.tables.filter((table) => table.kind === kind).length
      // The figures the closing note of issue 35 quotes.
      console.log(`citus classes: ${count("distributed")} distributed, ${count("reference")} reference, ${count("local")} local`)
      assert.isAbove(count("distributed"), 60)
    }))

  it.effect("docs/scaling.md names every table with the class the catalogue gives it", () =>
    Effect.gen(function*() {
      const schema = yield* readSchema
      const inDocs = documented()
      const migrated = schema.tables.filter((table) => table.kind !== "cluster")
      assert.deepStrictEqual(
        Object.fromEntries([...inDocs].sort()),
        Object.fromEntries(migrated.map((table) => [table.name, table.kind ?? "unclassified"]).sort())
      )
    }))

  it.effect("the check finds each kind of breach (tables made and rolled back in one transaction)", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const failed = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`CREATE TABLE citus_probe_parent (id uuid PRIMARY KEY, profile_id uuid NOT NULL, code text UNIQUE)`
        yield* sql`CREATE TABLE citus_probe_child (id uuid, profile_id uuid NOT NULL, parent_id uuid REFERENCES citus_probe_parent (id),
                   PRIMARY KEY (id, profile_id))`
        yield* sql`CREATE TABLE citus_probe_lookup (id uuid PRIMARY KEY, child_id uuid, child_profile uuid,
                   FOREIGN KEY (child_id, child_profile) REFERENCES citus_probe_child (id, profile_id))`
        yield* sql`COMMENT ON TABLE citus_probe_lookup IS 'reference: a probe'`
        yield* sql`CREATE TABLE citus_probe_bare (id uuid PRIMARY KEY)`
        return yield* Effect.fail(new RolledBack(yield* readSchema))
      })).pipe(Effect.flip)
      assert.instanceOf(failed, RolledBack)
      if (!(failed instanceof RolledBack)) return
      assert.deepStrictEqual(failed.schema.violations.filter((line) => line.startsWith("citus_probe")), [
        "citus_probe_bare: no profile_id and no reference/local comment",
        "citus_probe_parent: unique index citus_probe_parent_code_key lacks profile_id",
        "citus_probe_parent: primary key citus_probe_parent_pkey lacks profile_id",
        "citus_probe_child: foreign key citus_probe_child_parent_id_fkey to citus_probe_parent does not pair profile_id with profile_id",
        "citus_probe_lookup: reference table's foreign key citus_probe_lookup_child_id_child_profile_fkey points at distributed citus_probe_child"
      ])
      // Nothing stayed: the transaction rolled back.
      const left = yield* sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE 'citus_probe%'`
      assert.strictEqual(left[0]?.n, 0)
    }))
})
