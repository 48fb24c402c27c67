import { assert, describe, it } from "@effect/vitest"
import { Option, Result } from "effect"
import {
  arrivingAfterStored,
  changedFirstPaymentFlags,
  type FirstPaymentFacts,
  firstPaymentFlags,
  firstPaymentsWithAdded,
  newPaymentsOf,
  paymentAnchors,
  type PaymentFacts
} from "../../src/attribution/conversions/first-payments.ts"
import { normaliseAmount, rawNumberLiteral, rawValueLiteral } from "../../src/kernel/money.ts"
import { checkSubjectRef } from "../../src/ingestion/events/subject-ref.ts"

const amount = (literal: string) => Result.match(normaliseAmount(literal), { onSuccess: (text) => text, onFailure: () => "refused" })

describe("money literals", () => {
  it("normalises exactly, without a float", () => {
    assert.deepStrictEqual(
      ["19.99", "19.990000", "1.5e3", "1E+3", "1e-6", "00012.50", "-0.0", "-19.90", "99999999999999.999999", "0.1234560"].map(amount),
      ["19.99", "19.99", "1500", "1000", "0.000001", "12.5", "0", "-19.9", "99999999999999.999999", "0.123456"]
    )
  })

  it("refuses more than 6 decimals, more than 14 integer digits, and what is not a decimal", () => {
    for (const literal of ["0.1234567", "1e-7", "100000000000000", "1e14", "1e999999999", "12.", ".5", "1,5", "abc", "", "0x10", "Infinity"]) {
      assert.strictEqual(amount(literal), "refused", literal)
    }
  })

  it("reads a JSON number's literal from the raw body, only at properties.value", () => {
    assert.deepStrictEqual(rawValueLiteral("{\"properties\":{\"value\":12345678901234.123456}}"), Option.some("12345678901234.123456"))
    assert.deepStrictEqual(rawValueLiteral("{\"properties\":{\"value\":1.10,\"x\":2}}"), Option.some("1.10"))
    assert.isTrue(Option.isNone(rawValueLiteral("{\"properties\":{\"value\":\"1.10\"}}")))
    assert.isTrue(Option.isNone(rawValueLiteral("{\"value\":1,\"properties\":{}}")))
    assert.isTrue(Option.isNone(rawValueLiteral("not json")))
  })

  it("reads the literal JSON.parse would place at the path: repeated keys, escapes, nesting, whitespace, malformed bodies", () => {
    // The oracle: a parse whose reviver keeps each number's source text (Node >= 22).
    const oracle = (body: string, path: ReadonlyArray<string>): Option.Option<string> => {
      class Text {
        readonly text: string
        constructor(text: string) {
          this.text = text
        }
      }
      let root: unknown
      try {
        root = JSON.parse(body, (_key, value: unknown, context?: { readonly source?: string }) =>
          typeof value === "number" && context?.source !== undefined ? new Text(context.source) : value)
      } catch {
        return Option.none()
      }
      let value: unknown = root
      for (const key of path) {
        value = typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined
      }
      return value instanceof Text ? Option.some(value.text) : Option.none()
    }
    let seed = 7
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed / 2147483648
    }
    const pick = <A>(values: ReadonlyArray<A>): A => values[Math.floor(random() * values.length)]!
    const space = () => pick(["", "", " ", "\n\t ", "\r\n"])
    const key = () => pick(["\"value\"", "\"value\"", "\"properties\"", "\"properties\"", "\"amount\"", "\"amount\"", "\"v\\u0061lue\"", "\"prop\\u0065rties\"", "\"x\"", "\"va\\\"lue\""])
    const value = (depth: number): string => {
      const roll = random()
      if (depth < 3 && roll < (depth === 0 ? 0.9 : 0.5)) {
        const members = Array.from({ length: Math.floor(random() * 4) }, () => `${space()}${key()}${space()}:${space()}${value(depth + 1)}${space()}`)
        return `{${members.join(",")}}`
      }
      if (depth < 3 && roll < (depth === 0 ? 0.95 : 0.6)) return `[${Array.from({ length: Math.floor(random() * 3) }, () => value(depth + 1)).join(",")}]`
      return pick(["12.50", "-0.0", "1e3", "12345678901234.123456", "0", "\"12.5\"", "\"a\\\"b\"", "true", "null", "false", "1.10"])
    }
    const corrupt = (body: string) => {
      const at = Math.floor(random() * body.length)
      return pick([body.slice(0, at), body.slice(0, at) + pick(["}", ",", "\"", "x"]) + body.slice(at), body + pick(["}", " x", ""])])
    }
    let numbers = 0
    for (let round = 0; round < 3000; round++) {
      const body = `${space()}${value(0)}${space()}`
      for (const text of [body, corrupt(body)]) {
        for (const path of [["properties", "value"], ["amount"]]) {
          const expected = oracle(text, path)
          assert.deepStrictEqual(rawNumberLiteral(text, path), expected, `${JSON.stringify(text)} at ${path.join(".")}`)
          if (Option.isSome(expected)) numbers++
        }
      }
    }
    // The found case is common enough to mean something.
    assert.isAbove(numbers, 150)
  })

  it("reads past members nested as deep as a body allows (properties is open), without exhausting the stack", () => {
    const deep = "[".repeat(200_000) + "]".repeat(200_000)
    assert.deepStrictEqual(rawValueLiteral(`{"properties":{"x":${deep},"value":12.50,"y":{"z":${deep}}}}`), Option.some("12.50"))
    assert.isTrue(Option.isNone(rawValueLiteral(`{"properties":{"x":${deep.slice(0, -1)},"value":12.50}}`)))
  })
})

describe("subject_ref", () => {
  it("accepts a canonical UUID (lower-cased) and short tokens", () => {
    assert.deepStrictEqual(checkSubjectRef("A1B2C3D4-E5F6-4A4B-8C8D-9E9F0A0B0C0D"), { ok: true, value: "a1b2c3d4-e5f6-4a4b-8c8d-9e9f0a0b0c0d" })
    assert.deepStrictEqual(checkSubjectRef("12345678-1234-1234-1234-123456789012"), { ok: true, value: "12345678-1234-1234-1234-123456789012" })
    for (const token of ["pet-7", "kid_2", "a".repeat(32), "123456"]) assert.deepStrictEqual(checkSubjectRef(token), { ok: true, value: token })
  })

  it("names personal data before the shape", () => {
    const looks = (value: string) => {
      const verdict = checkSubjectRef(value)
      return !verdict.ok && verdict.personalData ? verdict.looksLike : "not personal data"
    }
    assert.strictEqual(looks("ana@example.com"), "an email address")
    assert.strictEqual(looks("+34 600 111 222"), "a phone number")
    assert.strictEqual(looks("1234567"), "a phone number")
    assert.strictEqual(looks("123-45-6789"), "a national id")
    assert.strictEqual(looks("X1234567L"), "a national id")
    assert.strictEqual(looks("12.345.678-K"), "a national id")
    assert.strictEqual(looks("pet-600111222"), "a phone number or national id")
    assert.strictEqual(looks("pet 7"), "not personal data")
    const malformed = checkSubjectRef("a".repeat(33))
    assert.isTrue(!malformed.ok && !malformed.personalData)
  })
})

const at = (day: number, hour = 10) => new Date(Date.UTC(2026, 2, 1, hour) + day * 86_400_000).toISOString().replace("Z", "000Z")
const pay = (id: string, day: number, extra: Partial<PaymentFacts> = {}): PaymentFacts => ({
  id,
  occurredAt: at(day),
  createdAt: at(0),
  subjectRef: null,
  orderGroup: null,
  ...extra
})

describe("first-payment flags", () => {
  it("do not depend on input order; ties on time fall back to arrival, then id", () => {
    const payments = [pay("c", 8), pay("a", 0), pay("b", 7)]
    const flags = firstPaymentFlags(payments)
    assert.deepStrictEqual(Object.fromEntries(flags), { a: true, b: true, c: false })
    assert.deepStrictEqual(Object.fromEntries(firstPaymentFlags([...payments].reverse())), Object.fromEntries(flags))
    const tie = firstPaymentFlags([pay("y", 0, { createdAt: at(1) }), pay("x", 0, { createdAt: at(2) }), pay("z", 9)])
    assert.deepStrictEqual(Object.fromEntries(tie), { y: true, x: true, z: false })
  })

  it("the window is anchored on the deposit, never chained", () => {
    const flags = firstPaymentFlags([pay("d", 0), pay("b1", 5), pay("b2", 10)])
    assert.deepStrictEqual(Object.fromEntries(flags), { d: true, b1: true, b2: false })
  })

  it("an untagged payment at the same instant as the first tagged one is not after it", () => {
    const flags = firstPaymentFlags([pay("t", 0, { subjectRef: "s" }), pay("u", 0), pay("u2", 1)])
    assert.deepStrictEqual(Object.fromEntries(flags), { t: true, u: true, u2: false })
  })

  it("flagged before the insert, new payments carry the flags a recompute after it would give them", () => {
    const row = (id: string, customer: string, day: number, created: number, extra: Partial<FirstPaymentFacts> = {}): FirstPaymentFacts => ({
      id,
      customer_id: customer,
      occurred_at: at(day),
      created_at: at(created),
      subject_ref: null,
      order_group: null,
      counts_as_cash: true,
      installment: false,
      is_first_payment: null,
      ...extra
    })
    // Stored: k's deposit on day 5 (first) and a repeat on day 20; m's tagged payment on day 0.
    const stored = [
      row("k1", "k", 5, 0, { is_first_payment: true }),
      row("k2", "k", 20, 1, { is_first_payment: false }),
      row("m1", "m", 0, 2, { subject_ref: "s", is_first_payment: true })
    ]
    // Arriving: a back-dated k payment on day 0 (it takes the first place: k1 within 7 days stays
    // first, k2 stays a repeat), a k payment on day 5 tied with k1 (arrives later: within the
    // window), an untagged m payment after m's tagged one (never first), a non-cash k conversion.
    const added = [
      row("n1", "k", 0, 0),
      row("n2", "k", 5, 0),
      row("n3", "m", 1, 0),
      row("n4", "k", 1, 0, { counts_as_cash: false })
    ].map((r, index) => ({ ...r, created_at: arrivingAfterStored(index) }))
    const result = firstPaymentsWithAdded(stored, added)
    assert.deepStrictEqual(Object.fromEntries(result.added), { n1: true, n2: true, n3: false, n4: null })
    // The same as inserting them (created after every stored row, in order) and recomputing.
    const inserted = added.map((r, index) => ({ ...r, created_at: at(10 + index), is_first_payment: result.added.get(r.id) ?? null }))
    const after = changedFirstPaymentFlags([...stored, ...inserted])
    const applied = new Set([...result.changed.nowTrue, ...result.changed.nowFalse, ...result.changed.nowNull])
    assert.deepStrictEqual(after.nowTrue.filter((id) => !applied.has(id)), [])
    assert.deepStrictEqual(after.nowFalse.filter((id) => !applied.has(id)), [])
    assert.deepStrictEqual(after.nowNull.filter((id) => !applied.has(id)), [])
    assert.deepStrictEqual(result.changed, { nowTrue: [], nowFalse: [], nowNull: [] })
    // A back-dated deposit two weeks earlier turns the stored first one into a repeat.
    const earlier = firstPaymentsWithAdded(stored, [{ ...row("n5", "k", -14, 0), created_at: arrivingAfterStored(0) }])
    assert.deepStrictEqual(Object.fromEntries(earlier.added), { n5: true })
    assert.deepStrictEqual(earlier.changed, { nowTrue: [], nowFalse: ["k1"], nowNull: [] })
  })

  it("the anchors decide as the whole history does, and a back-dated payment asks for the history (decision 0159)", () => {
    // A seeded generator (mulberry32), so a failure names a reproducible case.
    let seed = 35
    const random = () => {
      seed = (seed + 0x6d2b79f5) | 0
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296
    }
    const pick = <A>(values: ReadonlyArray<A>): A => values[Math.floor(random() * values.length)]!
    const day = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 86_400_000).toISOString().replace("Z", "000Z")
    let checkedLate = 0
    let checkedFast = 0
    for (let round = 0; round < 400; round++) {
      const customers = ["c1", "c2", "c3"]
      const history = Array.from({ length: Math.floor(random() * 12) }, (_, i): FirstPaymentFacts => ({
        id: `s${round}-${i}`,
        customer_id: pick(customers),
        occurred_at: day(Math.floor(random() * 40)),
        created_at: day(40 + i),
        subject_ref: pick([null, null, "a", "b"]),
        order_group: pick([null, "g1", "g2"]),
        counts_as_cash: random() < 0.85,
        installment: random() < 0.1,
        is_first_payment: null
      }))
      // Stored flags as the rules leave them.
      const settled = firstPaymentsWithAdded([], history)
      const stored = history.map((row) => ({ ...row, is_first_payment: settled.added.get(row.id) ?? null }))
      const added = Array.from({ length: 1 + Math.floor(random() * 4) }, (_, i): FirstPaymentFacts => ({
        id: `n${round}-${i}`,
        customer_id: pick(customers),
        // Mostly after the history, sometimes back-dated or tied.
        occurred_at: day(random() < 0.7 ? 40 + Math.floor(random() * 30) : Math.floor(random() * 41)),
        created_at: arrivingAfterStored(i),
        subject_ref: pick([null, "a", "b", "c"]),
        order_group: pick([null, "g1", "g2"]),
        counts_as_cash: random() < 0.9,
        installment: false,
        is_first_payment: null
      }))
      const whole = firstPaymentsWithAdded(stored, added)
      const asked = newPaymentsOf(added)
      const read = paymentAnchors(stored, asked)
      const fromAnchors = firstPaymentsWithAdded(read, added)
      assert.deepStrictEqual(Object.fromEntries(fromAnchors.added), Object.fromEntries(whole.added), `round ${round}`)
      assert.deepStrictEqual(fromAnchors.changed, whole.changed, `round ${round}`)
      // A customer read whole is one with a back-dated payment; only such a one has a stored flag to change.
      const readWhole = new Set(asked.flatMap(({ customerId }) => {
        const history = stored.filter((row) => row.customer_id === customerId && row.counts_as_cash && !row.installment)
        return history.length > 0 && read.filter((row) => row.customer_id === customerId).length === stored.filter((row) => row.customer_id === customerId).length &&
            history.some((row) => row.occurred_at > asked.find((a) => a.customerId === customerId)!.earliest)
          ? [customerId]
          : []
      }))
      for (const id of [...whole.changed.nowTrue, ...whole.changed.nowFalse, ...whole.changed.nowNull]) {
        assert.isTrue(readWhole.has(stored.find((row) => row.id === id)!.customer_id), `round ${round}: ${id}`)
      }
      checkedLate += readWhole.size
      checkedFast += asked.length - readWhole.size
    }
    // Both paths were exercised.
    assert.isAbove(checkedLate, 50)
    assert.isAbove(checkedFast, 200)
  })
})
