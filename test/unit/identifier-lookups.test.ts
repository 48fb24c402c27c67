/**
 * Every look-up of a customer's identifiers by kind names the profile (issue 34).
 *
 * `customer_identifiers_contact` is (profile_id, kind, customer_id) and `customer_identifiers_value`
 * (profile_id, kind, value). A statement that filters on the kind and the customer (or the value)
 * without the profile gets, from a planner without statistics (autovacuum is off here), a plan that
 * walks one of them across every profile's identifiers of that kind, per row: the outbox fan-out's
 * contact read, the identifier insert and the export facts each cost milliseconds per row that way
 * (bench/README, "commerce: statement log"). This reads the SQL of `src/` and holds every such
 * sub-select of `customer_identifiers` to naming `profile_id`.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"

const files = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

/** Each `FROM customer_identifiers <alias> WHERE ...` clause, up to the closing parenthesis or ORDER/LIMIT. */
const lookups = (text: string) =>
  [...text.matchAll(/FROM customer_identifiers (\w+)\s+WHERE([\s\S]*?)(?:ORDER BY|LIMIT|\)\s*(?:AS|,|\n|$))/g)].map((match) => ({
    alias: match[1]!,
    where: match[2]!
  }))

describe("customer identifier look-ups", () => {
  it("a look-up by kind and customer or value names the profile", () => {
    const offenders: Array<string> = []
    let checked = 0
    for (const file of files("src")) {
      for (const { alias, where } of lookups(readFileSync(file, "utf8"))) {
        const byKind = where.includes(`${alias}.kind =`) || where.includes(`${alias}.kind = ANY`)
        const byCustomerOrValue = where.includes(`${alias}.customer_id =`) || where.includes(`${alias}.value =`)
        if (!byKind || !byCustomerOrValue) continue
        checked++
        if (!where.includes(`${alias}.profile_id =`)) offenders.push(`${file}: ${where.replace(/\s+/g, " ").trim()}`)
      }
    }
    // The sweep must have found the known look-ups (outbox, export facts, customer lists, identifier writes).
    assert.isAtLeast(checked, 8)
    assert.deepStrictEqual(offenders, [])
  })
})
