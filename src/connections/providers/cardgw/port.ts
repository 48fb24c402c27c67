/**
 * The card gateway as the service needs it: the merchant account's payments created since a
 * time (the sync's cursor) and one payment, with the customer's email and phone and whether it
 * was refunded. Amounts are integer minor units of the payment's currency.
 */
import type { Effect, Stream } from "effect"
import { Context, Schema } from "effect"
import type { ProviderError } from "../errors.ts"
import type { ProviderSession } from "../oauth/port.ts"

export const Payment = Schema.Struct({
  id: Schema.String,
  amount_minor: Schema.Int,
  amount_refunded_minor: Schema.Int,
  currency: Schema.String,
  status: Schema.Literals(["succeeded", "refunded"]),
  description: Schema.NullOr(Schema.String),
  customer: Schema.Struct({
    id: Schema.NullOr(Schema.String),
    email: Schema.NullOr(Schema.String),
    phone: Schema.NullOr(Schema.String),
    name: Schema.NullOr(Schema.String)
  }),
  /** What the merchant attached at checkout (an order reference, a `customer_key`). */
  metadata: Schema.Record(Schema.String, Schema.String),
  created_at: Schema.String,
  refunded_at: Schema.NullOr(Schema.String)
})
export type Payment = typeof Payment.Type

export class CardGateway extends Context.Service<CardGateway, {
  /** Payments created at or after `createdSince` (every payment without it), oldest first. */
  readonly payments: (
    session: ProviderSession,
    options?: { readonly createdSince?: Date | undefined }
  ) => Stream.Stream<Payment, ProviderError>
  readonly getPayment: (session: ProviderSession, id: string) => Effect.Effect<Payment, ProviderError>
}>()("svc/CardGateway") {}
