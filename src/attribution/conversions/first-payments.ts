/**
 * First payments (decision 0029). A payment is a conversion whose definition `counts_as_cash`;
 * `is_first_payment` is null on every other conversion.
 *
 * Per customer, payments fall into streams: one per distinct `subject_ref`, and one for the
 * untagged payments. In each stream, ordered by `occurred_at` (then arrival, then id):
 * - the first payment is a first payment (the "deposit");
 * - a payment at most 7 days (7 × 24 h) after it is the same purchase (a balance): first too;
 * - a payment carrying the same `order_group` as it is another order of the same first
 *   purchase: first too, however late;
 * - every other payment is a repeat (false).
 * An untagged payment that occurs after any tagged payment of the customer is never first.
 * A payment the merchant marked as a later installment (decision 0032) is never first and
 * anchors nothing: it is left out of the streams.
 * A payment with no customer has nothing to repeat: first.
 *
 * The flags are a function of the customer's whole set of payments, so they are recomputed
 * from scratch (`EventsRepo.recomputeFirstPayments`, ./repo.ts) whenever that
 * set changes: a retraction, erasure and merges. An ingest reads only each stream's first payment
 * (`paymentAnchors`): a payment that sorts after every stored one changes no stored flag, and its
 * own follows from those; a back-dated one (it can take the first place) reads the whole set
 * (decision 0159).
 */
import { Schema } from "effect"

/** Same-purchase grouping: a balance within this long after the deposit. */
export const SAME_PURCHASE_WINDOW_MS = 7 * 24 * 60 * 60 * 1000

export interface PaymentFacts {
  readonly id: string
  /** ISO 8601 UTC with microseconds (fixed width, so it sorts as text). */
  readonly occurredAt: string
  readonly createdAt: string
  readonly subjectRef: string | null
  readonly orderGroup: string | null
  /** Marked by the merchant as a later installment (decision 0032): never first. Default false. */
  readonly installment?: boolean
}

const compare = (a: PaymentFacts, b: PaymentFacts) =>
  a.occurredAt < b.occurredAt ? -1 : a.occurredAt > b.occurredAt ? 1 :
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 :
  a.id < b.id ? -1 : a.id > b.id ? 1 : 0

/** `is_first_payment` of each of one customer's payments. */
export const firstPaymentFlags = (payments: ReadonlyArray<PaymentFacts>): ReadonlyMap<string, boolean> => {
  const flags = new Map<string, boolean>()
  for (const payment of payments) if (payment.installment === true) flags.set(payment.id, false)
  const ordered = payments.filter((payment) => payment.installment !== true).sort(compare)
  const firstTagged = ordered.find((payment) => payment.subjectRef !== null)
  const anchors = new Map<string, PaymentFacts>()
  for (const payment of ordered) {
    if (payment.subjectRef === null && firstTagged !== undefined && payment.occurredAt > firstTagged.occurredAt) {
      flags.set(payment.id, false)
      continue
    }
    const stream = payment.subjectRef === null ? "" : `ref:${payment.subjectRef}`
    const anchor = anchors.get(stream)
    if (anchor === undefined) {
      anchors.set(stream, payment)
      flags.set(payment.id, true)
      continue
    }
    const withinWindow = Date.parse(payment.occurredAt) - Date.parse(anchor.occurredAt) <= SAME_PURCHASE_WINDOW_MS
    const sameOrderGroup = anchor.orderGroup !== null && payment.orderGroup === anchor.orderGroup
    flags.set(payment.id, withinWindow || sameOrderGroup)
  }
  return flags
}

/** What the recompute reads of each conversion of the customers (EventsRepo.recomputeFirstPayments). */
export const FirstPaymentFacts = Schema.Struct({
  id: Schema.String,
  customer_id: Schema.String,
  occurred_at: Schema.String,
  created_at: Schema.String,
  subject_ref: Schema.NullOr(Schema.String),
  order_group: Schema.NullOr(Schema.String),
  counts_as_cash: Schema.Boolean,
  installment: Schema.Boolean,
  is_first_payment: Schema.NullOr(Schema.Boolean)
})
export type FirstPaymentFacts = typeof FirstPaymentFacts.Type

/** What the rules read of a stored row (its installment mark aside). */
const factsOf = (row: FirstPaymentFacts): PaymentFacts => ({
  id: row.id,
  occurredAt: row.occurred_at,
  createdAt: row.created_at,
  subjectRef: row.subject_ref,
  orderGroup: row.order_group
})

/** The flag each conversion of one customer should carry. */
const flagsOf = (rows: ReadonlyArray<FirstPaymentFacts>, into: Map<string, boolean | null>) => {
  const flags = firstPaymentFlags(
    rows.filter((row) => row.counts_as_cash).map((row) => ({ ...factsOf(row), installment: row.installment }))
  )
  for (const row of rows) into.set(row.id, row.counts_as_cash ? (flags.get(row.id) ?? null) : null)
}

const byCustomer = (rows: ReadonlyArray<FirstPaymentFacts>) => {
  const lists = new Map<string, Array<FirstPaymentFacts>>()
  for (const row of rows) {
    const list = lists.get(row.customer_id)
    if (list === undefined) lists.set(row.customer_id, [row])
    else list.push(row)
  }
  return lists.values()
}

/** Flag changes of stored rows, by the value each changes to. */
const changesOf = (rows: ReadonlyArray<FirstPaymentFacts>, flags: ReadonlyMap<string, boolean | null>) => {
  const nowTrue: Array<string> = []
  const nowFalse: Array<string> = []
  const nowNull: Array<string> = []
  for (const row of rows) {
    const flag = flags.get(row.id) ?? null
    if (flag === row.is_first_payment) continue
    if (flag === true) nowTrue.push(row.id)
    else if (flag === false) nowFalse.push(row.id)
    else nowNull.push(row.id)
  }
  return { nowTrue, nowFalse, nowNull }
}

export type FlagChanges = ReturnType<typeof changesOf>

/**
 * The conversions, of every conversion of some customers, whose `is_first_payment` must change,
 * by the value it changes to. The flags are a function of each customer's whole set of payments.
 */
export const changedFirstPaymentFlags = (rows: ReadonlyArray<FirstPaymentFacts>): FlagChanges => {
  const flags = new Map<string, boolean | null>()
  for (const list of byCustomer(rows)) flagsOf(list, flags)
  return changesOf(rows, flags)
}

/** Sorts after every stored `created_at` (ISO text), in the order of `index`. */
export const arrivingAfterStored = (index: number) => `\uffff${String(index).padStart(6, "0")}`

/**
 * Conversions about to be inserted, next to the stored conversions of their customers (read under
 * the customers' locks): the flag each new one is inserted with, and the stored ones that change.
 * The same flags `changedFirstPaymentFlags` would give after the insert, so an ingest writes each
 * new row once instead of inserting it and updating it. `added` carry `created_at` values that sort
 * after every stored one in insertion order (`arrivingAfterStored`), as the inserted rows' will.
 */
export const firstPaymentsWithAdded = (stored: ReadonlyArray<FirstPaymentFacts>, added: ReadonlyArray<FirstPaymentFacts>) => {
  const flags = new Map<string, boolean | null>()
  for (const list of byCustomer([...stored, ...added])) flagsOf(list, flags)
  return { added: new Map(added.map((row) => [row.id, flags.get(row.id) ?? null] as const)), changed: changesOf(stored, flags) }
}

/**
 * A stored conversion the flags of new payments depend on, with `latest`, the `occurred_at` of its
 * customer's last cash payment (installments left out). What `Conversions.paymentAnchorsOf` reads
 * (decision 0159).
 */
export const PaymentAnchor = Schema.Struct({ ...FirstPaymentFacts.fields, latest: Schema.String })
export type PaymentAnchor = typeof PaymentAnchor.Type

/** Per customer, the earliest `occurred_at` of its new cash payments: what `paymentAnchorsOf` is asked. */
export interface NewPayments {
  readonly customerId: string
  readonly earliest: string
}

/** `NewPayments` of rows about to be inserted (`firstPaymentsWithAdded`'s `added`). */
export const newPaymentsOf = (added: ReadonlyArray<FirstPaymentFacts>): ReadonlyArray<NewPayments> => {
  const earliest = new Map<string, string>()
  for (const row of added) {
    if (!row.counts_as_cash || row.installment) continue
    const known = earliest.get(row.customer_id)
    if (known === undefined || row.occurred_at < known) earliest.set(row.customer_id, row.occurred_at)
  }
  return [...earliest].map(([customerId, at]) => ({ customerId, earliest: at }))
}

/**
 * What `paymentAnchorsOf` answers, computed from the customers' whole history (its tests compare
 * the statement with it). A customer whose new payments all sort after its stored ones (at or
 * after `latest`: a new row's `created_at` sorts after every stored one) keeps every stored flag,
 * and each new flag follows from its stream's first payment and the first tagged one: only the
 * first cash payment of each stream is read. A customer with a back-dated payment, which can take
 * the first place and move stored flags, is read whole, as before.
 */
export const paymentAnchors = (rows: ReadonlyArray<FirstPaymentFacts>, asked: ReadonlyArray<NewPayments>): ReadonlyArray<PaymentAnchor> => {
  const earliest = new Map(asked.map((payment) => [payment.customerId, payment.earliest] as const))
  return [...byCustomer(rows.filter((row) => earliest.has(row.customer_id)))].flatMap((list) => {
    const payments = list.filter((row) => row.counts_as_cash && !row.installment).sort((a, b) => compare(factsOf(a), factsOf(b)))
    if (payments.length === 0) return []
    const latest = payments.reduce((last, row) => (row.occurred_at > last ? row.occurred_at : last), payments[0]!.occurred_at)
    if (latest > earliest.get(list[0]!.customer_id)!) return list.map((row) => ({ ...row, latest }))
    const firsts = new Map<string | null, FirstPaymentFacts>()
    for (const row of payments) if (!firsts.has(row.subject_ref)) firsts.set(row.subject_ref, row)
    return [...firsts.values()].map((row) => ({ ...row, latest }))
  })
}
