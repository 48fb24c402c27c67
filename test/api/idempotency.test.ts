import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, serveApp, testSettings } from "../support/app.ts"
import { chargeCounter, ProbeApp } from "../support/probe-api.ts"

const charge = (key: string | undefined, body: Record<string, unknown>, token = "svc_live_payments") =>
  call("/api/v1/probe/charge", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${token}`,
      ...(key === undefined ? {} : { "idempotency-key": key })
    },
    body: JSON.stringify(body)
  })

const unique = (label: string) => `${label}-${crypto.randomUUID()}`

layer(serveApp(testSettings(), ProbeApp), { timeout: "60 seconds", excludeTestServices: true })("Idempotency-Key", (it) => {
  describe("an operation that requires the header", () => {
    it.effect("refuses a request without it: 400 invalid_request naming the header", () =>
      Effect.gen(function*() {
        const before = chargeCounter.value
        const response = yield* charge(undefined, { amount: 100 })
        assert.strictEqual(response.status, 400)
        assert.strictEqual(response.json.error.code, "invalid_request")
        assert.include(response.json.error.message, "idempotency-key")
        assert.strictEqual(chargeCounter.value, before)
      }))

    it.effect("replays the first 2xx for the same request without running the handler again", () =>
      Effect.gen(function*() {
        const key = unique("replay")
        const first = yield* charge(key, { amount: 100 })
        assert.strictEqual(first.status, 201)
        const ran = chargeCounter.value
        const second = yield* charge(key, { amount: 100 })
        assert.strictEqual(second.status, 201)
        assert.deepStrictEqual(second.json, first.json)
        assert.strictEqual(second.headers.get("idempotent-replayed"), "true")
        assert.strictEqual(chargeCounter.value, ran)
        assert.notStrictEqual(second.headers.get("x-request-id"), first.headers.get("x-request-id"))
      }))

    it.effect("the same key with a different request is 409 idempotency_key_conflict", () =>
      Effect.gen(function*() {
        const key = unique("conflict")
        yield* charge(key, { amount: 100 })
        const ran = chargeCounter.value
        const conflicting = yield* charge(key, { amount: 999 })
        assert.strictEqual(conflicting.status, 409)
        assert.strictEqual(conflicting.json.error.code, "idempotency_key_conflict")
        assert.strictEqual(chargeCounter.value, ran)
      }))

    it.effect("a repeat while the first still runs is 409 idempotency_key_in_flight; fifty in parallel run once", () =>
      Effect.gen(function*() {
        const key = unique("inflight")
        const before = chargeCounter.value
        const responses = yield* Effect.all(
          Array.from({ length: 50 }, () => charge(key, { amount: 5, delay_ms: 1_000 })),
          { concurrency: "unbounded" }
        )
        const created = responses.filter((r) => r.status === 201 && r.headers.get("idempotent-replayed") === null)
        // On a loaded machine a late request may arrive after the first finished: it is a replay, not a second run.
        const replayed = responses.filter((r) => r.status === 201 && r.headers.get("idempotent-replayed") === "true")
        const inFlight = responses.filter((r) => r.status === 409)
        assert.strictEqual(created.length, 1)
        assert.strictEqual(inFlight.length + replayed.length, 49)
        assert.isAbove(inFlight.length, 0)
        for (const r of inFlight) assert.strictEqual(r.json.error.code, "idempotency_key_in_flight")
        for (const r of replayed) assert.deepStrictEqual(r.json, created[0]?.json)
        assert.strictEqual(chargeCounter.value, before + 1)
        const after = yield* charge(key, { amount: 5, delay_ms: 1_000 })
        assert.strictEqual(after.status, 201)
        assert.deepStrictEqual(after.json, created[0]?.json)
      }))

    it.effect("only a 2xx is stored: a failed attempt releases the key", () =>
      Effect.gen(function*() {
        const key = unique("release")
        const failed = yield* charge(key, { amount: 1, fail: true })
        assert.strictEqual(failed.status, 409)
        assert.strictEqual(failed.json.error.code, "invalid_state")
        const retried = yield* charge(key, { amount: 1, fail: true })
        assert.strictEqual(retried.json.error.code, "invalid_state", "the handler ran again instead of replaying")
      }))

    it.effect("keys are scoped to the credential", () =>
      Effect.gen(function*() {
        const key = unique("scoped")
        const mine = yield* charge(key, { amount: 7 })
        assert.strictEqual(mine.status, 201)
        const other = yield* charge(key, { amount: 8 }, "svc_live_readonly")
        assert.strictEqual(other.status, 201)
        assert.strictEqual(other.json.data.amount, 8)
      }))
  })
})
