/**
 * `CreditEngine.pathStats` counts the `svc_model` statistics in SQL (decision 0035). This test
 * builds a profile whose identities exercise every rule of decision 0030 (anonymous ids bound to
 * one customer, to two customers, bound by a removed or non-`anonymous_id` identifier, an
 * identified touch whose anonymous id is bound to another customer, unbound visitors, `outcome`
 * touches, ties on time, ineligible conversions, conversions without a customer or definition,
 * several windows), computes the channel paths of decision 0030 in plain TypeScript from the
 * inserted rows, and expects exactly `buildPathStats` of those paths.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CreditEngine } from "../../src/attribution/engine.ts"
import { buildPathStats, type ChannelPath, DAY_MS } from "../../src/attribution/models/index.ts"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { serveApp, testSettings } from "../support/app.ts"
import { seedProfile } from "../support/tenancy.ts"

/** mulberry32: the same data on every run. */
const rng = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const CHANNELS = ["paid_search", "paid_social", "organic_search", "email", "direct", "referral"]
const KINDS = ["web_touch", "web_touch", "web_touch", "synthetic", "inherited", "outcome"]

interface Touch {
  readonly id: string
  readonly at: number
  readonly channel: string
  readonly kind: string
  readonly customerId: string | null
  readonly anonymousId: string | null
}
interface Identifier {
  readonly customerId: string
  readonly kind: string
  readonly value: string
  readonly removed: boolean
}
interface Conversion {
  readonly id: string
  readonly at: number
  readonly customerId: string | null
  readonly definition: "purchase" | "lead" | "refund" | null
}

const WINDOWS = { purchase: 30, lead: 7, refund: 30 } as const
const ELIGIBLE = { purchase: true, lead: true, refund: false } as const

const buildData = (now: number) => {
  const next = rng(20261121)
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(next() * items.length)] as A
  const customers = Array.from({ length: 40 }, () => crypto.randomUUID())
  const identifiers: Array<Identifier> = []
  customers.forEach((customerId, i) => {
    if (i % 3 !== 0) identifiers.push({ customerId, kind: "anonymous_id", value: `anon-${i}`, removed: false })
    if (i % 7 === 0) identifiers.push({ customerId, kind: "anonymous_id", value: `old-${i}`, removed: true })
    if (i % 5 === 0) identifiers.push({ customerId, kind: "email", value: `visitor-${i}`, removed: false })
  })
  // One anonymous id bound to two customers (a shared device).
  identifiers.push({ customerId: customers[2] ?? "", kind: "anonymous_id", value: "anon-1", removed: false })
  const anonymousIds = [
    ...customers.map((_, i) => `anon-${i}`),
    ...customers.map((_, i) => `old-${i}`),
    ...Array.from({ length: 30 }, (_, i) => `visitor-${i}`)
  ]
  const touches: Array<Touch> = []
  for (let i = 0; i < 900; i++) {
    const at = now - Math.floor(next() * 120 * DAY_MS)
    const mode = next()
    const customerId = mode < 0.45 ? pick(customers) : null
    const anonymousId = mode >= 0.3 ? pick(anonymousIds) : null
    if (customerId === null && anonymousId === null) continue
    touches.push({ id: crypto.randomUUID(), at, channel: pick(CHANNELS), kind: pick(KINDS), customerId, anonymousId })
  }
  // Ties on time: same millisecond, different ids (the id decides the order).
  const tied = now - 3 * DAY_MS
  for (const channel of ["email", "direct", "paid_search"]) {
    touches.push({ id: crypto.randomUUID(), at: tied, channel, kind: "web_touch", customerId: customers[4] ?? null, anonymousId: null })
    touches.push({ id: crypto.randomUUID(), at: tied, channel, kind: "web_touch", customerId: null, anonymousId: "visitor-3" })
  }
  // Window bounds, both inclusive: a visitor's touches exactly 30 days and 30 days + 1 ms before
  // its last one; a conversion's touches at its own millisecond, exactly 7 days and 7 days + 1 ms before.
  const last = now - 2 * DAY_MS
  for (const [offset, channel] of [[0, "email"], [30 * DAY_MS, "referral"], [30 * DAY_MS + 1, "direct"]] as const) {
    touches.push({ id: crypto.randomUUID(), at: last - offset, channel, kind: "web_touch", customerId: null, anonymousId: "edge-visitor" })
  }
  const converter = customers[30] ?? ""
  for (const [offset, channel] of [[0, "email"], [7 * DAY_MS, "paid_social"], [7 * DAY_MS + 1, "organic_search"]] as const) {
    touches.push({ id: crypto.randomUUID(), at: last - offset, channel, kind: "web_touch", customerId: converter, anonymousId: null })
  }
  const conversions: Array<Conversion> = [{ id: crypto.randomUUID(), at: last, customerId: converter, definition: "lead" }]
  for (let i = 0; i < 60; i++) {
    const definition = next() < 0.1 ? null : pick(["purchase", "purchase", "lead", "refund"] as const)
    conversions.push({
      id: crypto.randomUUID(),
      at: now - Math.floor(next() * 100 * DAY_MS),
      customerId: next() < 0.08 ? null : pick(customers.slice(0, 25)),
      definition
    })
  }
  return { customers, identifiers, touches, conversions }
}

/** Decision 0030's channel paths, straight from the rows. */
const expectedPaths = (data: ReturnType<typeof buildData>): Array<ChannelPath> => {
  const creditable = data.touches.filter((touch) => touch.kind !== "outcome")
  const order = (a: Touch, b: Touch) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  const live = data.identifiers.filter((identifier) => identifier.kind === "anonymous_id" && !identifier.removed)
  const boundTo = (customerId: string) => new Set(live.filter((identifier) => identifier.customerId === customerId).map((identifier) => identifier.value))
  const bound = new Set(live.map((identifier) => identifier.value))
  const touchesOf = (customerId: string) => {
    const anonymous = boundTo(customerId)
    return creditable.filter((touch) =>
      touch.customerId === customerId || (touch.anonymousId !== null && anonymous.has(touch.anonymousId))
    )
  }
  const paths: Array<ChannelPath> = []
  const converting = new Set<string>()
  for (const conversion of data.conversions) {
    if (conversion.customerId === null) continue
    const eligible = conversion.definition === null ? true : ELIGIBLE[conversion.definition]
    if (!eligible) continue
    converting.add(conversion.customerId)
    const days = conversion.definition === null ? 30 : WINDOWS[conversion.definition]
    const onPath = touchesOf(conversion.customerId)
      .filter((touch) => touch.at <= conversion.at && touch.at >= conversion.at - days * DAY_MS)
      .sort(order)
    paths.push({ converted: true, channels: onPath.map((touch) => touch.channel) })
  }
  const idle = (touches: ReadonlyArray<Touch>) => {
    if (touches.length === 0) return
    const last = Math.max(...touches.map((touch) => touch.at))
    const onPath = touches.filter((touch) => touch.at >= last - 30 * DAY_MS).sort(order)
    paths.push({ converted: false, channels: onPath.map((touch) => touch.channel) })
  }
  for (const customerId of data.customers) if (!converting.has(customerId)) idle(touchesOf(customerId))
  const visitors = new Set(
    creditable.filter((touch) => touch.customerId === null && touch.anonymousId !== null && !bound.has(touch.anonymousId))
      .map((touch) => touch.anonymousId ?? "")
  )
  for (const visitor of visitors) idle(creditable.filter((touch) => touch.customerId === null && touch.anonymousId === visitor))
  return paths
}

const manual = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })
const app = serveApp(testSettings()).pipe(Layer.provide(manual))

layer(CreditEngine.layer.pipe(Layer.provideMerge(app)), { timeout: "120 seconds", excludeTestServices: true })(
  "svc_model path statistics (CreditEngine.pathStats)",
  (it) => {
    describe("counted in SQL", () => {
      it.effect("equal buildPathStats over decision 0030's paths computed from the rows", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const engine = yield* CreditEngine
          const { profileId } = yield* seedProfile()
          const now = Math.floor(Date.now() / 1000) * 1000
          const data = buildData(now)
          const definitionIds = { purchase: crypto.randomUUID(), lead: crypto.randomUUID(), refund: crypto.randomUUID() }
          for (const key of ["purchase", "lead", "refund"] as const) {
            yield* sql`
              INSERT INTO conversion_definitions (id, profile_id, conversion_key, name, event_names, lookback_window_days, attribution_eligible)
              VALUES (${definitionIds[key]}, ${profileId}, ${key}, ${key}, ${[key]}, ${WINDOWS[key]}, ${ELIGIBLE[key]})`
          }
          yield* sql`
            INSERT INTO customers (id, profile_id, customer_key)
            SELECT id, ${profileId}, 'c-' || id FROM unnest(${data.customers}::uuid[]) AS x(id)`
          yield* sql`
            INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value, removed_at)
            SELECT gen_random_uuid(), ${profileId}, c, k, v, CASE WHEN r THEN now() END
            FROM unnest(${data.identifiers.map((i) => i.customerId)}::uuid[], ${data.identifiers.map((i) => i.kind)}::text[],
                        ${data.identifiers.map((i) => i.value)}::text[], ${data.identifiers.map((i) => i.removed)}::boolean[]) AS x(c, k, v, r)`
          yield* sql`
            INSERT INTO touches (id, profile_id, kind, occurred_at, channel, customer_id, anonymous_id)
            SELECT id, ${profileId}, k, to_timestamp(at / 1000.0), ch, c, a
            FROM unnest(${data.touches.map((t) => t.id)}::uuid[], ${data.touches.map((t) => t.kind)}::text[],
                        ${data.touches.map((t) => t.at)}::float8[], ${data.touches.map((t) => t.channel)}::text[],
                        ${data.touches.map((t) => t.customerId)}::uuid[], ${data.touches.map((t) => t.anonymousId)}::text[])
              AS x(id, k, at, ch, c, a)`
          for (const conversion of data.conversions) {
            const eventId = crypto.randomUUID()
            const key = conversion.definition ?? "signup"
            yield* sql`
              WITH e AS (
                INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at, customer_id)
                VALUES (${eventId}, ${profileId}, ${eventId}, 'test', ${key}, ${new Date(conversion.at)}, ${conversion.customerId})
                RETURNING profile_id, idempotency_key, id, occurred_at)
              INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
            yield* sql`
              INSERT INTO conversions (id, profile_id, outcome_event_id, definition_id, conversion_key, occurred_at, customer_id,
                                       counts_as_cash, attribution_eligible)
              VALUES (${conversion.id}, ${profileId}, ${eventId},
                      ${conversion.definition === null ? null : definitionIds[conversion.definition]}, ${key},
                      ${new Date(conversion.at)}, ${conversion.customerId}, false, true)`
          }

          const expected = buildPathStats(expectedPaths(data))
          const actual = yield* engine.pathStats(profileId)
          assert.isAbove(expected.converting_paths, 10)
          assert.isAbove(expected.total_paths - expected.converting_paths, 10)
          assert.isAbove(expected.transitions.flat().reduce((a, b) => a + b, 0), 50)
          assert.deepStrictEqual(actual, expected)
        }))

      it.effect("an empty profile has empty statistics", () =>
        Effect.gen(function*() {
          const engine = yield* CreditEngine
          const { profileId } = yield* seedProfile()
          assert.deepStrictEqual(yield* engine.pathStats(profileId), buildPathStats([]))
        }))
    })
  }
)
