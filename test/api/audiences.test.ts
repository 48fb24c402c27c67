/**
 * Audiences (decision 0099) through real HTTP: the audience exclusions of a profile
 * (replace-the-set, unknown customers refused with nothing changed, another profile's id 404,
 * scope). Customers a test starts from are written by SQL (the customers domain's rows).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call, serveApp, testSettings } from "../support/app.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const seed = (scopes: ReadonlyArray<string> = ["exports:write", "exports:read"]) =>
  Effect.gen(function*() {
    const profile = yield* seedProfile()
    const { key } = yield* seedApiKey(profile, { scopes: [...scopes], rateLimitPerMinute: 10_000 })
    return { ...profile, key }
  })

const customer = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const id = crypto.randomUUID()
    yield* sql`INSERT INTO customers (id, profile_id, customer_key) VALUES (${id}, ${profileId}, ${`c-${id.slice(0, 8)}`})`
    return id
  })

const stored = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const rows = yield* sql<{ id: string }>`
      SELECT customer_id::text AS id FROM audience_exclusions WHERE profile_id = ${profileId} ORDER BY customer_id`
    return rows.map((row) => row.id)
  })

const put = (key: string, profileId: string, body: unknown) =>
  call(`/api/v1/profiles/${profileId}/audience-exclusions`, {
    method: "PUT",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("audiences", (it) => {
  describe("PUT /api/v1/profiles/{profileId}/audience-exclusions", () => {
    it.effect("replaces the set; a repeat is the same; an empty array clears it", () =>
      Effect.gen(function*() {
        const fixture = yield* seed()
        const a = yield* customer(fixture.profileId)
        const b = yield* customer(fixture.profileId)
        const first = yield* put(fixture.key, fixture.profileId, { customer_ids: [a, b, a] })
        assert.strictEqual(first.status, 200, first.text)
        const expected = [a, b].sort()
        assert.deepStrictEqual(first.json, { data: { profile_id: fixture.profileId, customer_ids: expected } })
        assert.deepStrictEqual(yield* stored(fixture.profileId), expected)

        const again = yield* put(fixture.key, fixture.profileId, { customer_ids: [b] })
        assert.strictEqual(again.status, 200, again.text)
        assert.deepStrictEqual(yield* stored(fixture.profileId), [b])

        const cleared = yield* put(fixture.key, fixture.profileId, { customer_ids: [] })
        assert.strictEqual(cleared.status, 200, cleared.text)
        assert.deepStrictEqual(yield* stored(fixture.profileId), [])
      }))

    it.effect("an unknown or another profile's customer answers 422 unknown_customer_ref and changes nothing", () =>
      Effect.gen(function*() {
        const fixture = yield* seed()
        const other = yield* seed()
        const mine = yield* customer(fixture.profileId)
        const theirs = yield* customer(other.profileId)
        assert.strictEqual((yield* put(fixture.key, fixture.profileId, { customer_ids: [mine] })).status, 200)
        for (const bad of [theirs, crypto.randomUUID(), "not-a-uuid"]) {
          const response = yield* put(fixture.key, fixture.profileId, { customer_ids: [bad] })
          assert.strictEqual(response.status, 422, response.text)
          assert.strictEqual((response.json as { error: { code: string } }).error.code, "unknown_customer_ref")
        }
        assert.deepStrictEqual(yield* stored(fixture.profileId), [mine])
      }))

    it.effect("another profile's id answers 404; a bad body 400 validation_error; a key without exports:write 403", () =>
      Effect.gen(function*() {
        const fixture = yield* seed()
        const other = yield* seed()
        const notMine = yield* put(fixture.key, other.profileId, { customer_ids: [] })
        assert.strictEqual(notMine.status, 404, notMine.text)
        assert.strictEqual((notMine.json as { error: { code: string } }).error.code, "not_found")

        const bad = yield* put(fixture.key, fixture.profileId, { customer_ids: "x" })
        assert.strictEqual(bad.status, 400, bad.text)
        assert.strictEqual((bad.json as { error: { code: string } }).error.code, "validation_error")

        const reader = yield* seed(["exports:read"])
        const refused = yield* put(reader.key, reader.profileId, { customer_ids: [] })
        assert.strictEqual(refused.status, 403, refused.text)
      }))
  })
})
