/**
 * A conversion found by a near-unique key costs one probe whatever the planner knew when it made
 * the plan (decision 0154).
 *
 * `conversions` has two indexes that an equality on (profile, time) can walk: the
 * one-conversion-per-outcome key and (profile_id, occurred_at DESC, id DESC). A statement prepared
 * while the event's month was empty, its generic plan kept (no ANALYZE: autovacuum is off on these
 * machines), could take the second and read every conversion of the profile at that instant: an
 * import stamped at one time makes that the whole import. The export pipeline met it first
 * (test/api/queue-claim-plans.test.ts); here are the other statements that probe a conversion by its
 * outcome or its id (the ingest's replay check, a retraction's count and delete, the lookup of a
 * person's conversion by reference) or by their customer (a customer's conversions queued again for
 * crediting, after a merge or a partner's answer, and those a touch's window reaches). Each is
 * prepared on the empty tables and kept, then run against 200,000 conversions at one instant, 200
 * to a customer, as a connection of a service started on an empty database runs it; it must answer
 * the right rows and stay short.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Conversions from "../../src/attribution/conversions/repo.ts"
import * as Customers from "../../src/identity/customers/repo.ts"
import { analyzedTables, keep, md5Uuid, onTestDatabase } from "../support/claim-plan.ts"

const ROWS = 200_000
/** Conversion g is customer g % CUSTOMERS's: 200 conversions a customer. */
const CUSTOMERS = 1_000
/** One probe through an index takes well under a millisecond; walking the instant's rows takes hundreds. Loose, for a shared machine. */
const RUN_MS = 50

// PostgreSQL's planner on the server the service runs against; seeding 200,000 conversions into
// the embedded database would take minutes of the suite.
describe.skipIf(process.env["DATABASE_URL"] === undefined)("conversion probe plans", () => {
  it.effect("kept from empty months, run at 200,000 conversions of one instant (no ANALYZE)", () =>
    onTestDatabase(Effect.gen(function*() {
      const sql = yield* SqlClient
      const workspaceId = crypto.randomUUID()
      const profileId = crypto.randomUUID()
      yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'probe plans')`
      yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${profileId}, ${workspaceId}, 'probe plans')`
      // Every outcome and conversion at one instant (an import stamped at one time), in this month.
      const at = new Date(Date.now() - 3_600_000).toISOString()
      const eventId = (g: number) => md5Uuid(`${profileId}-event-${g}`)
      const conversionId = (g: number) => md5Uuid(`${profileId}-conversion-${g}`)
      const probed = 7
      const event = { id: eventId(probed), profile_id: profileId, occurred_at: at }
      const eventsStatements = Conversions.eventConversionsStatements(sql, event)
      const customerId = (k: number) => md5Uuid(`${profileId}-customer-${k}`)
      const perCustomer = ROWS / CUSTOMERS
      const reached = [{ customerId: customerId(probed), at }]

      const checked = [
        {
          label: "stored events of a batch (ingest)",
          statement: Conversions.findEventsStatement(sql, [{ profileId, name: `key-${probed}` }]),
          answers: 1
        },
        { label: "credit rows of an event's conversions (retraction)", statement: eventsStatements.credits, answers: 1 },
        { label: "an event's conversions deleted (retraction)", statement: eventsStatements.remove, answers: 1 },
        {
          label: "a person's conversion by idempotency key",
          statement: Customers.findConversionStatement(sql, profileId, `key-${probed}`, null),
          answers: 1
        },
        {
          label: "a person's conversion by event id",
          statement: Customers.findConversionStatement(sql, profileId, eventId(probed), eventId(probed)),
          answers: 1
        },
        {
          label: "a person's conversion by conversion id",
          statement: Customers.findConversionStatement(sql, profileId, conversionId(probed), conversionId(probed)),
          answers: 1
        },
        {
          label: "a customer's conversions queued again (merge)",
          statement: Conversions.enqueueStatement(sql, Conversions.customerConversions(sql, profileId, customerId(probed))),
          answers: 1
        },
        {
          label: "conversions a touch's window reaches, queued again (partner answer)",
          statement: Conversions.enqueueStatement(sql, Conversions.inWindowConversions(sql, profileId, reached)),
          answers: 1
        },
        {
          label: "a customer's payments that decide new ones' flags (ingest, decision 0159)",
          statement: Conversions.paymentAnchorsStatement(sql, [{ customerId: customerId(probed), earliest: "2999-01-01T00:00:00Z" }]),
          answers: 1
        },
        {
          label: "a customer's payments before a back-dated one (ingest, decision 0159)",
          statement: Conversions.paymentAnchorsStatement(sql, [{ customerId: customerId(probed), earliest: "2000-01-01T00:00:00Z" }]),
          answers: perCustomer
        },
        {
          label: "conversions a touch's window reaches, read",
          statement: Conversions.conversionsInWindowStatement(sql, profileId, reached),
          answers: perCustomer
        }
      ]
      // Prepared now, while every table is empty, as a service started on an empty database prepares them.
      const kept = []
      for (const { statement } of checked) kept.push(yield* keep(statement))

      yield* sql`
        INSERT INTO customers (id, profile_id, customer_key)
        SELECT ${sql.literal(`md5('${profileId}-customer-' || k)::uuid`)}, ${profileId}, 'customer-' || k
        FROM generate_series(0, ${CUSTOMERS - 1}::int) AS k`
      yield* sql`
        WITH e AS (
          INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at)
          SELECT ${sql.literal(`md5('${profileId}-event-' || g)::uuid`)}, ${profileId}, 'key-' || g, 'h', 'purchase', ${at}::timestamptz
          FROM generate_series(0, ${ROWS - 1}::int) AS g
          RETURNING profile_id, idempotency_key, id, occurred_at)
        INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
      yield* sql`
        INSERT INTO conversions (id, profile_id, outcome_event_id, conversion_key, occurred_at, counts_as_cash, attribution_eligible, customer_id)
        SELECT ${sql.literal(`md5('${profileId}-conversion-' || g)::uuid`)}, ${profileId}, ${sql.literal(`md5('${profileId}-event-' || g)::uuid`)},
               'purchase', ${at}::timestamptz, true, true, ${sql.literal(`md5('${profileId}-customer-' || (g % ${CUSTOMERS}))::uuid`)}
        FROM generate_series(0, ${ROWS - 1}::int) AS g`
      yield* sql`DELETE FROM credit_queue WHERE profile_id = ${profileId}`
      // One credit row per conversion: a read of the credits by anything but the conversion's key shows.
      yield* sql`
        INSERT INTO attribution_credits (profile_id, conversion_id, converted_at, model, touch_id, touch_at, position, credit_share, is_credited, in_window)
        SELECT ${profileId}, ${sql.literal(`md5('${profileId}-conversion-' || g)::uuid`)}, ${at}::timestamptz, 'last_touch', gen_random_uuid(),
               ${at}::timestamptz, 0, 1, true, true
        FROM generate_series(0, ${ROWS - 1}::int) AS g`

      // Every index of a month of conversions (or of credits) that leads with the profile: a walk of
      // the profile's rows, by time or key, not a probe.
      const profileWalks = (yield* sql<{ name: string }>`
        SELECT c.relname AS name FROM pg_index i
        JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_inherits h ON h.inhrelid = i.indrelid
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
        WHERE h.inhparent IN ('conversions'::regclass, 'attribution_credits'::regclass) AND a.attname = 'profile_id'`).map((row) => row.name)
      assert.isAbove(profileWalks.length, 0)
      const failures: Array<string> = []
      for (const [i, { answers, label }] of checked.entries()) {
        const run = yield* kept[i]!.run
        yield* kept[i]!.release
        console.log(`${label}, kept from empty, at ${ROWS}: ${run.ms.toFixed(2)} ms\n${run.plan}`)
        if (run.answered !== answers) failures.push(`${label}: ${run.answered} rows answered, not ${answers}`)
        if (run.ms >= RUN_MS) failures.push(`${label}: ${run.ms.toFixed(1)} ms kept from empty\n${run.plan}`)
        for (const scan of ["Seq Scan on conversions", "Seq Scan on attribution_credits", "Seq Scan on outcome_events"]) {
          if (run.plan.includes(scan)) failures.push(`${label}: reads through ${scan}\n${run.plan}`)
        }
        const walked = profileWalks.filter((name) => new RegExp(`(using|Bitmap Index Scan on) ${name}( on|  )`).test(run.plan))
        if (walked.length > 0) failures.push(`${label}: walks the profile through ${walked.join(", ")}\n${run.plan}`)
      }
      // What each answers, run for real: the probed event's own conversion.
      const stored = yield* Conversions.findEventsStatement(sql, [{ profileId, name: `key-${probed}` }])
      assert.deepStrictEqual(stored.map((row) => row["conversion_id"]), [conversionId(probed)])
      for (const ref of [`key-${probed}`, eventId(probed), conversionId(probed)]) {
        const found = yield* Customers.findConversionStatement(sql, profileId, ref, ref.startsWith("key-") ? null : ref)
        assert.deepStrictEqual(found.map((row) => [row["outcome_event_id"], row["conversion_id"]]), [[eventId(probed), conversionId(probed)]])
      }
      const [queued] = yield* Conversions.enqueueStatement(sql, Conversions.inWindowConversions(sql, profileId, reached))
      assert.strictEqual(queued?.["n"], perCustomer)
      assert.deepStrictEqual(failures, [])
      assert.strictEqual(yield* analyzedTables(["conversions", "outcome_events", "outcome_keys", "attribution_credits", "credit_queue"]), 0)
    })), { timeout: 300_000 })
})
