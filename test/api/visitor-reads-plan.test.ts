/**
 * The reads of one customer's or one visitor's touches cost probes of that customer or visitor
 * whatever the planner knew when it made the plan (decision 0155): crediting's candidate touches
 * (`candidateTouchesStatement`), the binding of one visitor's touches to a customer, the binding of
 * a batch's visitors (`bindVisitorsStatement`), and the customer of a visitor's latest touch.
 *
 * Each statement is prepared and its generic plan kept (no ANALYZE: autovacuum is off on these
 * machines) in two states a pooled connection meets: every table empty, as on a new database, and
 * with another profile's rows already there, as in a CI run's database, where crediting's plan
 * walked the month's (profile, time) index for the customer's touches and `customer_identifiers_value`
 * by (profile, kind) for its anonymous ids. Each kept plan then runs against a profile of 100,000
 * touches in the window, 1,000 customers with 5 anonymous ids each; it must answer the right rows,
 * stay short, and use no index that leads with the profile without a key narrower than the profile.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { candidateTouchesStatement } from "../../src/attribution/repo.ts"
import { bindVisitorsStatement, bindVisitorStatement } from "../../src/attribution/touches/repo.ts"
import { customerByAnonymousIdStatement } from "../../src/identity/customers/repo.ts"
import { byKeySettings } from "../../src/platform/claim-settings.ts"
import { analyzedTables, keep, md5Uuid, onTestDatabase } from "../support/claim-plan.ts"

const CUSTOMERS = 1_000
/** Each customer's own touches, and its anonymous ids with their touches each. */
const OWN = 50
const IDS = 5
const PER_ID = 10
/** Probes take well under a millisecond each; walking the profile's window takes hundreds. Loose, for a shared machine. */
const RUN_MS = 50

/** One profile's customers, their anonymous ids and touches: all within the hour before `at`. */
const seed = (sql: SqlClient, profileId: string, customers: number, at: string) =>
  Effect.gen(function*() {
    const customer = (k: string) => sql.literal(`md5('${profileId}-customer-' || ${k})::uuid`)
    yield* sql`
      INSERT INTO customers (id, profile_id, customer_key)
      SELECT ${customer("k")}, ${profileId}, 'customer-' || k FROM generate_series(0, ${customers - 1}::int) AS k`
    yield* sql`
      INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value)
      SELECT gen_random_uuid(), ${profileId}, ${customer("k")}, 'anonymous_id', 'anon-' || k || '-' || i
      FROM generate_series(0, ${customers - 1}::int) AS k, generate_series(0, ${IDS - 1}::int) AS i`
    yield* sql`
      INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value)
      SELECT gen_random_uuid(), ${profileId}, ${customer("k")}, 'email', 'c' || k || '@example.com'
      FROM generate_series(0, ${customers - 1}::int) AS k`
    // The customer's own touches (from a browser of its own, 'seen-k', not among its identifiers),
    // then each anonymous id's (no customer on them: bound through the identifier).
    yield* sql`
      INSERT INTO touches (id, profile_id, kind, occurred_at, channel, customer_id, anonymous_id)
      SELECT gen_random_uuid(), ${profileId}, 'web_touch', ${at}::timestamptz - make_interval(secs => 1 + (g % 3000)), 'paid_search',
             ${customer(`(g % ${customers})`)}, 'seen-' || (g % ${customers})
      FROM generate_series(0, ${customers * OWN - 1}::int) AS g`
    yield* sql`
      INSERT INTO touches (id, profile_id, kind, occurred_at, channel, anonymous_id)
      SELECT gen_random_uuid(), ${profileId}, 'web_touch', ${at}::timestamptz - make_interval(secs => 1 + (g % 3000)), 'organic_social',
             'anon-' || (g % ${customers}) || '-' || ((g / ${customers}) % ${IDS})
      FROM generate_series(0, ${customers * IDS * PER_ID - 1}::int) AS g`
  })

// PostgreSQL's planner on the server the service runs against; seeding 100,000 touches into the
// embedded database would take minutes of the suite.
describe.skipIf(process.env["DATABASE_URL"] === undefined)("visitor reads plans", () => {
  it.effect("kept from empty tables and from another profile's rows, run at 100,000 touches of one profile (no ANALYZE)", () =>
    onTestDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient
      const workspaceId = crypto.randomUUID()
      const profileId = crypto.randomUUID()
      const otherId = crypto.randomUUID()
      yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'candidate plans')`
      yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${profileId}, ${workspaceId}, 'probed'), (${otherId}, ${workspaceId}, 'other')`
      const at = new Date(Date.now() - 3_600_000).toISOString()
      const probed = [7, 300, 999]
      const conversions = probed.map((k) => ({
        id: md5Uuid(`${profileId}-conversion-${k}`),
        profile_id: profileId,
        customer_id: md5Uuid(`${profileId}-customer-${k}`),
        occurred_at: at,
        window_days: 30
      }))
      const customer7 = md5Uuid(`${profileId}-customer-7`)
      const byKeyed = byKeySettings(sql).compile()[0]
      const checked = [
        // Crediting's read, in its transaction's settings: each customer's touches and its anonymous ids'.
        {
          label: "candidate touches",
          statement: candidateTouchesStatement(sql, conversions),
          settings: byKeyed,
          answers: (OWN + IDS * PER_ID) * probed.length
        },
        // One visitor's unbound touches joining its customer: a count.
        {
          label: "one visitor bound",
          statement: bindVisitorStatement(sql, profileId, "anon-7-1", customer7, "anonymous_id"),
          settings: undefined,
          // Its time holds the touches' analytics trigger (tens of ms beside the credit rows other
          // tests leave in the database): the plan check guards the read.
          untimed: true,
          answers: 1
        },
        // A batch's visitors joining their customers, in its settings: an update joined to the rows it
        // names. Kept from an empty month without them, the join hashed every touch (73 ms at 100,000).
        {
          label: "a batch of visitors bound",
          statement: bindVisitorsStatement(sql, [
            { profileId, anonymousId: "anon-7-1", customerId: customer7 },
            { profileId, anonymousId: "anon-300-2", customerId: md5Uuid(`${profileId}-customer-300`) }
          ]),
          settings: byKeyed,
          untimed: true,
          probesOnly: true,
          answers: 2
        },
        { label: "a visitor's customer", statement: customerByAnonymousIdStatement(sql, profileId, "seen-7"), settings: byKeyed, answers: 1 }
      ]

      // Kept while every table these read is as a new database has it, then after another profile's rows.
      const fromEmpty = []
      for (const { settings, statement } of checked) fromEmpty.push(yield* keep(statement, settings))
      yield* seed(sql, otherId, 100, at)
      const fromOther = []
      for (const { settings, statement } of checked) fromOther.push(yield* keep(statement, settings))
      yield* seed(sql, profileId, CUSTOMERS, at)

      // Indexes of touches' months and of identifiers that lead with the profile: used with no
      // equality on another column than the profile and the kind, each is a walk of the profile.
      const leading = yield* sql<{ name: string }>`
        SELECT c.relname AS name FROM pg_index i
        JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
        WHERE a.attname = 'profile_id'
          AND (i.indrelid IN ('customer_identifiers'::regclass, 'customers'::regclass)
            OR i.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'touches'::regclass))`
      assert.isAbove(leading.length, 0)
      const walks = (plan: string) => {
        const lines = plan.split("\n")
        const found: Array<string> = []
        lines.forEach((line, n) => {
          const used = leading.find(({ name }) => new RegExp(`(using|Bitmap Index Scan on) ${name}( on|  )`).test(line))
          if (used === undefined) return
          // The node's own lines: up to the next node.
          const next = lines.findIndex((other, m) => m > n && other.includes("->"))
          const condition = lines.slice(n + 1, next === -1 ? undefined : next).find((own) => own.includes("Index Cond:")) ?? ""
          const narrower = [...condition.matchAll(/\((\w+) = /g)].map((m) => m[1]).filter((column) => column !== "profile_id" && column !== "kind")
          if (narrower.length === 0) found.push(`${used.name}: ${condition.trim()}`)
        })
        return found
      }

      const failures: Array<string> = []
      for (const [state, kept] of [["kept from empty tables", fromEmpty], ["kept from another profile's rows", fromOther]] as const) {
        for (const [i, { answers, label, ...rest }] of checked.entries()) {
          const run = yield* kept[i]!.run
          yield* kept[i]!.release
          console.log(`${label}, ${state}, at ${CUSTOMERS * (OWN + IDS * PER_ID)} touches: ${run.ms.toFixed(2)} ms\n${run.plan}`)
          if (run.answered !== answers) failures.push(`${label}, ${state}: ${run.answered} rows answered, not ${answers}`)
          if (!("untimed" in rest) && run.ms >= RUN_MS) failures.push(`${label}, ${state}: ${run.ms.toFixed(1)} ms\n${run.plan}`)
          for (const scan of ["Seq Scan on touches", "Seq Scan on customer_identifiers", "Seq Scan on customers"]) {
            if (run.plan.includes(scan)) failures.push(`${label}, ${state}: reads through ${scan}\n${run.plan}`)
          }
          if ("probesOnly" in rest && /Hash Join|Merge Join|Hash Semi Join|Hash Anti Join/.test(run.plan)) {
            failures.push(`${label}, ${state}: joins by hash or merge, not by probe\n${run.plan}`)
          }
          const walked = walks(run.plan)
          if (walked.length > 0) failures.push(`${label}, ${state}: walks the profile through ${walked.join("; ")}\n${run.plan}`)
        }
      }
      // What they answer, run for real: each customer's own touches and its anonymous ids', once each;
      // the visitor's customer; a binding's count (rolled back).
      const expected = OWN + IDS * PER_ID
      const rows = yield* candidateTouchesStatement(sql, conversions)
      for (const conversion of conversions) {
        const mine = rows.filter((row) => row["conversion_id"] === conversion.id)
        assert.strictEqual(new Set(mine.map((row) => row["id"])).size, expected)
      }
      assert.deepStrictEqual((yield* customerByAnonymousIdStatement(sql, profileId, "seen-7")).map((row) => row.id), [customer7])
      // One connection here (as `keep` runs its statements): BEGIN and ROLLBACK around the binding.
      yield* sql.unsafe("BEGIN")
      const [bound] = yield* bindVisitorStatement(sql, profileId, "anon-7-1", customer7, "anonymous_id")
      yield* sql.unsafe("ROLLBACK")
      assert.strictEqual(bound?.n, PER_ID)
      assert.deepStrictEqual(failures, [])
      assert.strictEqual(yield* analyzedTables(["touches", "customer_identifiers", "customers"]), 0)
    })), { timeout: 300_000 })
})
