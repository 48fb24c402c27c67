/**
 * The simulated card gateway: merchant accounts and their payments (amount in minor units,
 * customer email and phone, `succeeded` or `refunded`). Arrivals are payments made at the
 * gateway (`payment.succeeded` pushed); `PATCH _state` refunds one (`payment.refunded`).
 */
import { randomUUID } from "node:crypto"
import { Result, Schema } from "effect"
import {
  type Arrived,
  isoAt,
  listSince,
  ownedOne,
  type Page,
  SEED_EPOCH_MS,
  seededPerson,
  seededRandom,
  seedOf,
  type WorldPush,
  worldPush,
  WorldRefusal
} from "../world-kit.ts"

export interface CardgwAccount {
  readonly id: string
  readonly name: string
  readonly currency: string
  readonly timezone: string
}

export interface Payment {
  readonly id: string
  readonly account_id: string
  /** Integer minor units of `currency`. */
  readonly amount_minor: number
  readonly amount_refunded_minor: number
  readonly currency: string
  readonly status: "succeeded" | "refunded"
  readonly description: string | null
  readonly customer: {
    readonly id: string | null
    readonly email: string | null
    readonly phone: string | null
    readonly name: string | null
  }
  /** What the merchant attached at checkout (an order reference, a `customer_key`). */
  readonly metadata: Readonly<Record<string, string>>
  readonly created_at: string
  readonly refunded_at: string | null
}

const ACCOUNTS: ReadonlyArray<CardgwAccount> = [
  { id: "acct_cardgw_1001", name: "Sandbox merchant", currency: "EUR", timezone: "Europe/Madrid" },
  { id: "acct_cardgw_1002", name: "Sandbox merchant US", currency: "USD", timezone: "America/New_York" }
]

export const CARDGW_SEEDED_PAYMENTS_PER_ACCOUNT = 40

const Refund = Schema.Struct({
  id: Schema.String,
  status: Schema.Literal("refunded"),
  amount_refunded_minor: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)))
})
const DisputeChange = Schema.Struct({
  id: Schema.String,
  dispute: Schema.Struct({
    status: Schema.Literals(["open", "won", "lost"]),
    amount_minor: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)))
  })
})

/** A chargeback on a payment: opened by the buyer's bank, then won or lost by the merchant. */
export interface Dispute {
  readonly id: string
  readonly payment_id: string
  readonly status: "open" | "won" | "lost"
  readonly amount_minor: number
  readonly updated_at: string
}

const PaymentArrival = Schema.Struct({
  kind: Schema.Literal("payment"),
  account_id: Schema.optionalKey(Schema.String),
  amount_minor: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  currency: Schema.optionalKey(Schema.String),
  description: Schema.optionalKey(Schema.NullOr(Schema.String)),
  customer: Schema.optionalKey(Schema.Struct({
    id: Schema.optionalKey(Schema.NullOr(Schema.String)),
    email: Schema.optionalKey(Schema.NullOr(Schema.String)),
    phone: Schema.optionalKey(Schema.NullOr(Schema.String)),
    name: Schema.optionalKey(Schema.NullOr(Schema.String))
  })),
  metadata: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
})

export class CardgwWorld {
  readonly accounts: ReadonlyArray<CardgwAccount> = ACCOUNTS
  private readonly payments = new Map<string, Payment>()
  /** payment id → its dispute (one per payment). */
  private readonly disputes = new Map<string, Dispute>()
  private readonly now: () => number

  constructor(now: () => number = Date.now) {
    this.now = now
    for (const account of ACCOUNTS) {
      const random = seededRandom(seedOf(account.id))
      const suffix = account.id.slice("acct_cardgw_".length)
      for (let n = 1; n <= CARDGW_SEEDED_PAYMENTS_PER_ACCOUNT; n++) {
        const person = seededPerson(random, n, "payer.example")
        const createdMs = SEED_EPOCH_MS - random.int(1, 90) * 86_400_000 - random.int(0, 86_399) * 1000
        const amount = random.int(10, 900) * 100 + random.pick([0, 50, 99])
        const refunded = random.next() < 0.1
        const id = `pay_${suffix}_${String(n).padStart(4, "0")}`
        this.payments.set(id, {
          id,
          account_id: account.id,
          amount_minor: amount,
          amount_refunded_minor: refunded ? amount : 0,
          currency: account.currency,
          status: refunded ? "refunded" : "succeeded",
          description: `Order ${1000 + n}`,
          customer: {
            id: `cus_${suffix}_${String(n).padStart(4, "0")}`,
            email: person.email,
            phone: random.next() < 0.7 ? person.phone : null,
            name: `${person.first_name} ${person.last_name}`
          },
          metadata: { order_ref: String(1000 + n) },
          created_at: isoAt(createdMs),
          refunded_at: refunded ? isoAt(createdMs + random.int(1, 10) * 86_400_000) : null
        })
      }
    }
  }

  state() {
    return {
      accounts: this.accounts,
      payments: [...this.payments.values()].sort((a, b) => (a.id < b.id ? -1 : 1)),
      disputes: [...this.disputes.values()].sort((a, b) => (a.id < b.id ? -1 : 1))
    }
  }

  // --- the provider's API -----------------------------------------------------------------

  /** Payments of the account created at or after `created_since`, oldest first. */
  listPayments(
    accountId: string,
    query: { readonly limit?: number; readonly after?: string; readonly created_since?: string }
  ): Page<Payment> | WorldRefusal {
    return listSince(this.payments.values(), {
      owned: (payment) => payment.account_id === accountId,
      filter: "created_since",
      since: query.created_since,
      at: (payment) => payment.created_at
    }, query)
  }

  getPayment(accountId: string, id: string): Payment | WorldRefusal {
    return ownedOne(this.payments.get(id), (payment) => payment.account_id === accountId, "payment", id)
  }

  // --- test controls ----------------------------------------------------------------------

  /** `{objects: [{id: <payment id>, status: "refunded", amount_refunded_minor?}]}` (pushes `payment.refunded`). */
  patchObjects(objects: ReadonlyArray<unknown>): Array<WorldPush> | WorldRefusal {
    const disputes = objects.map((object) => Schema.decodeUnknownResult(DisputeChange)(object))
    if (disputes.length > 0 && disputes.every(Result.isSuccess)) return this.patchDisputes(disputes.map((d) => d.success))
    const refunds: Array<{ readonly payment: Payment; readonly amount: number }> = []
    for (const object of objects) {
      const decoded = Schema.decodeUnknownResult(Refund)(object)
      if (Result.isFailure(decoded)) {
        return new WorldRefusal(400, "invalid_parameter", "objects[] must be {id: <payment id>, status: \"refunded\", amount_refunded_minor?}")
      }
      const payment = this.payments.get(decoded.success.id)
      if (!payment) return new WorldRefusal(404, "not_found", `no payment ${decoded.success.id}`)
      if (payment.status === "refunded") return new WorldRefusal(409, "conflict", `payment ${payment.id} is already refunded`)
      const amount = decoded.success.amount_refunded_minor ?? payment.amount_minor
      if (amount > payment.amount_minor) {
        return new WorldRefusal(400, "invalid_parameter", `a refund cannot exceed the payment (${payment.amount_minor})`)
      }
      refunds.push({ payment, amount })
    }
    const at = isoAt(this.now())
    return refunds.map(({ payment, amount }) => {
      const refunded: Payment = { ...payment, status: "refunded", amount_refunded_minor: amount, refunded_at: at }
      this.payments.set(refunded.id, refunded)
      return this.push(refunded, "payment.refunded")
    })
  }

  /** `{arrive: {kind: "payment", ...}}`: a payment made at the gateway (pushes `payment.succeeded`). */
  arrive(arrival: unknown): Arrived | WorldRefusal {
    const decoded = Schema.decodeUnknownResult(PaymentArrival)(arrival)
    if (Result.isFailure(decoded)) {
      return new WorldRefusal(
        400,
        "invalid_parameter",
        "arrive must be {kind: \"payment\", account_id?, amount_minor?, currency?, description?, customer?: {id?, email?, phone?, name?}, metadata?}"
      )
    }
    const input = decoded.success
    const account = ACCOUNTS.find((candidate) => candidate.id === (input.account_id ?? ACCOUNTS[0]!.id))
    if (!account) return new WorldRefusal(404, "not_found", `no account ${input.account_id}`)
    const payment: Payment = {
      id: `pay_${randomUUID().replaceAll("-", "").slice(0, 16)}`,
      account_id: account.id,
      amount_minor: input.amount_minor ?? 5_000,
      amount_refunded_minor: 0,
      currency: input.currency ?? account.currency,
      status: "succeeded",
      description: input.description ?? null,
      customer: {
        id: input.customer?.id ?? null,
        email: input.customer?.email ?? null,
        phone: input.customer?.phone ?? null,
        name: input.customer?.name ?? null
      },
      metadata: input.metadata ?? {},
      created_at: isoAt(this.now()),
      refunded_at: null
    }
    this.payments.set(payment.id, payment)
    return { reply: { payment }, pushes: [this.push(payment, "payment.succeeded")] }
  }

  /**
   * `{objects: [{id: <payment id>, dispute: {status: "open" | "won" | "lost", amount_minor?}}]}`:
   * opens or settles the payment's dispute (pushes `payment.disputed` with `{object: {payment, dispute}}`).
   */
  private patchDisputes(changes: ReadonlyArray<typeof DisputeChange.Type>): Array<WorldPush> | WorldRefusal {
    for (const change of changes) {
      const payment = this.payments.get(change.id)
      if (!payment) return new WorldRefusal(404, "not_found", `no payment ${change.id}`)
      const amount = change.dispute.amount_minor ?? this.disputes.get(change.id)?.amount_minor ?? payment.amount_minor
      if (amount > payment.amount_minor) {
        return new WorldRefusal(400, "invalid_parameter", `a dispute cannot exceed the payment (${payment.amount_minor})`)
      }
      const settled = this.disputes.get(change.id)?.status
      if (settled === "won" || settled === "lost") return new WorldRefusal(409, "conflict", `the dispute of ${payment.id} is already ${settled}`)
    }
    const at = isoAt(this.now())
    return changes.map((change) => {
      const payment = this.payments.get(change.id)!
      const previous = this.disputes.get(change.id)
      const dispute: Dispute = {
        id: previous?.id ?? `dp_${randomUUID().replaceAll("-", "").slice(0, 16)}`,
        payment_id: payment.id,
        status: change.dispute.status,
        amount_minor: change.dispute.amount_minor ?? previous?.amount_minor ?? payment.amount_minor,
        updated_at: at
      }
      this.disputes.set(payment.id, dispute)
      return worldPush(payment.account_id, "payment.disputed", this.now(), { object: { payment, dispute } })
    })
  }

  private push(payment: Payment, type: string): WorldPush {
    return worldPush(payment.account_id, type, this.now(), { object: payment })
  }

}
