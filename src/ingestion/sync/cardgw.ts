/**
 * Card-gateway payments of a connection (decision 0063): pulled on sync (payments created since
 * the last sync) and pushed through `/hooks/cardgw` (`payment.succeeded`, `payment.refunded`,
 * `payment.disputed`). Each is recorded exactly as `POST /api/v1/payments/cardgw` records one
 * (the payments domain's `reportCardgw`: the gateway payment id is the idempotency key, so a
 * replayed callback or a sync after a push records nothing twice); a refund or a lost dispute
 * is applied as the payments domain's refund (idempotent: the same amount and reason again
 * changes nothing).
 */
import { Context, Effect, Layer, Option, Result, Schema, Stream } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { CardgwPayment } from "../../../schema/payments.ts"
import { minorExponent } from "../../kernel/money.ts"
import type { PrincipalShape, ProfileContext } from "../../kernel/principal.ts"
import { PaymentsService } from "../events/payments/service.ts"
import { normalizePhone } from "../../identity/normalize.ts"
import { CardGateway, Payment } from "../../connections/providers/cardgw/port.ts"
import type { ProviderError } from "../../connections/providers/errors.ts"
import { ConnectionRecords } from "../../connections/records.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { laterOf, latestOf } from "./checkpoint.ts"
import { SyncJobsRepo } from "./repo.ts"

/** The gateway acts, not a person: audit rows of its refunds name the service itself. */
const GATEWAY_ACTOR: PrincipalShape = { kind: "operator" }

/** The reason a gateway refund carries (always the same text, so a repeat is "the same refund"). */
export const CARDGW_REFUND_REASON = "Refunded at the card gateway"
/** A dispute the merchant lost: the money went back to the buyer. */
export const CARDGW_DISPUTE_REASON = "Dispute lost at the card gateway"

/** A sync reads from a little before the last one: payments created while it ran are not missed. */
const SYNC_OVERLAP_MS = 60 * 60 * 1000

/** A dispute as the gateway pushes it (`payment.disputed`): the payment, and the dispute's status. */
const DisputeObject = Schema.Struct({
  payment: Payment,
  dispute: Schema.Struct({
    id: Schema.String,
    status: Schema.Literals(["open", "won", "lost"]),
    amount_minor: Schema.Int
  })
})

const CallbackBody = Schema.Struct({
  type: Schema.String,
  account_id: Schema.String,
  data: Schema.Struct({ object: Schema.Unknown })
})

/** `minor` integer units of `currency` as a decimal string (`5000` EUR → `50.00`). */
export const fromMinor = (minor: number, currency: string): string => {
  const exponent = minorExponent(currency)
  const digits = String(Math.abs(minor))
  if (exponent === 0) return `${minor < 0 ? "-" : ""}${digits}`
  const padded = digits.padStart(exponent + 1, "0")
  return `${minor < 0 ? "-" : ""}${padded.slice(0, -exponent)}.${padded.slice(-exponent)}`
}

const EMAIL = /^[^\s@]+@[^\s@]+$/

/** The payment as `POST /api/v1/payments/cardgw` takes it; the gateway's data that would not pass is left out. */
export const reportBody = (payment: Payment): CardgwPayment => {
  const email = payment.customer.email?.trim() ?? ""
  const phone = payment.customer.phone === null ? null : normalizePhone(payment.customer.phone)
  const customerKey = payment.metadata["customer_key"]?.trim() ?? ""
  const description = payment.description?.trim() ?? ""
  return {
    gateway_payment_id: payment.id,
    amount: fromMinor(payment.amount_minor, payment.currency.toUpperCase()),
    currency: payment.currency.toUpperCase(),
    occurred_at: payment.created_at,
    customer: {
      ...(customerKey === "" ? {} : { external_id: customerKey.slice(0, 255) }),
      ...(EMAIL.test(email) && email.length <= 320 ? { email } : {}),
      ...(phone !== null && Result.isSuccess(phone) ? { phone: phone.success } : {})
    },
    ...(description === "" ? {} : { description: description.slice(0, 500) })
  }
}

/** What one payment did: recorded (new or already there), skipped (why), and whether a refund was applied now. */
export interface CardgwRecordResult {
  readonly paymentId: string | null
  readonly skipped: string | null
  readonly refundApplied: boolean
}

export class CardgwPayments extends Context.Service<CardgwPayments, {
  /** Records the payment for the profile (once per gateway payment id), then its refund if it has one. */
  readonly record: (
    profile: ProfileContext,
    payment: Payment,
    refund?: { readonly amountMinor: number; readonly reason: string }
  ) => Effect.Effect<CardgwRecordResult, DatabaseUnavailable>
  /** A sync job's work: every payment created since the connection's last sync (a little before), recorded. */
  readonly sync: <E>(
    job: { readonly profile_id: string; readonly connection_id: string; readonly checkpoint: string | null },
    /** After each batch is wholly recorded: the payments seen, and the batch's latest creation (the checkpoint). */
    onBatch: (recorded: number, checkpoint: string) => Effect.Effect<void, E>
  ) => Effect.Effect<number, DatabaseUnavailable | ProviderError | E>
  /** A callback's event for every profile holding the account; true when it was one of the payment events. */
  readonly hook: (body: unknown) => Effect.Effect<boolean, DatabaseUnavailable>
}>()("svc/CardgwPayments") {
  static readonly layer = Layer.effect(CardgwPayments)(
    Effect.gen(function*() {
      const payments = yield* PaymentsService
      const gateway = yield* CardGateway
      const sessions = yield* ConnectionSessions
      const connections = yield* ConnectionRecords
      const jobs = yield* SyncJobsRepo

      const profileOf = (profileId: string, workspaceId: string) =>
        Effect.map(jobs.attributionOn(profileId), (attributionEnabled): ProfileContext => ({
          profileId,
          workspaceId,
          attributionEnabled
        }))

      const record = Effect.fn("CardgwPayments.record")(function*(
        profile: ProfileContext,
        payment: Payment,
        refund?: { readonly amountMinor: number; readonly reason: string }
      ) {
        const body = reportBody(payment)
        const recorded = yield* payments.reportCardgw(GATEWAY_ACTOR, profile, body, Option.none()).pipe(
          Effect.map((data) => ({ paymentId: data.payment_id, skipped: null })),
          Effect.catch((error) =>
            error._tag === "DatabaseUnavailable"
              ? Effect.fail(error)
              // The gateway's data cannot be refused like a request: the payment is left out, and said so.
              : Effect.as(
                Effect.logWarning("card-gateway payment not recorded", { gateway_payment_id: payment.id, code: error._tag }),
                { paymentId: null, skipped: error._tag }
              )
          )
        )
        const refundMinor = refund?.amountMinor ?? (payment.status === "refunded" ? payment.amount_refunded_minor : 0)
        if (recorded.paymentId === null || refundMinor <= 0) return { ...recorded, refundApplied: false }
        const applied = yield* payments.recordRefund(GATEWAY_ACTOR, profile, recorded.paymentId, {
          amount: Option.some(fromMinor(Math.min(refundMinor, payment.amount_minor), payment.currency.toUpperCase())),
          reason: refund?.reason ?? CARDGW_REFUND_REASON
        }).pipe(
          Effect.map((result) => result.meta.changed),
          Effect.catch((error) =>
            error._tag === "DatabaseUnavailable"
              ? Effect.fail(error)
              // A refund the merchant recorded by hand stands (already_refunded); nothing paid, nothing to refund.
              : Effect.as(
                Effect.logInfo("card-gateway refund not applied", { gateway_payment_id: payment.id, code: error._tag }),
                false
              )
          )
        )
        return { ...recorded, refundApplied: applied }
      })

      const sync = <E>(
        job: { readonly profile_id: string; readonly connection_id: string; readonly checkpoint: string | null },
        onBatch: (recorded: number, checkpoint: string) => Effect.Effect<void, E>
      ) =>
        Effect.gen(function*() {
          const connection = yield* connections.find(job.connection_id)
          if (Option.isNone(connection)) return 0
          const view = yield* connections.view(job.profile_id, job.connection_id)
          const last = Option.flatMap(view, (found) => Option.fromNullishOr(found.last_synced_at))
          // A job taken over after a crash resumes at its checkpoint (decision 0065): payments come
          // oldest first and the filter is inclusive, so the batch cut by the crash is read again.
          const createdSince = laterOf(Option.isSome(last) ? new Date(Date.parse(last.value) - SYNC_OVERLAP_MS) : undefined, job.checkpoint)
          const profile = yield* profileOf(job.profile_id, connection.value.workspace_id)
          const session = yield* sessions.session(job.connection_id)
          let count = 0
          yield* gateway.payments(session, { createdSince }).pipe(
            Stream.grouped(100),
            Stream.runForEach((batch) =>
              Effect.gen(function*() {
                for (const payment of batch) {
                  yield* record(profile, payment)
                  count++
                }
                yield* onBatch(count, latestOf(batch.map((payment) => payment.created_at)))
              })
            )
          )
          return count
        }).pipe(Effect.withSpan("CardgwPayments.sync"))

      const hook = Effect.fn("CardgwPayments.hook")(function*(raw: unknown) {
        const body = Schema.decodeUnknownOption(CallbackBody)(raw)
        if (Option.isNone(body)) return false
        const { type, account_id: accountId, data } = body.value
        let payment: Payment
        let refund: { readonly amountMinor: number; readonly reason: string } | undefined
        if (type === "payment.succeeded" || type === "payment.refunded") {
          const decoded = Schema.decodeUnknownOption(Payment)(data.object)
          if (Option.isNone(decoded)) return false
          payment = decoded.value
        } else if (type === "payment.disputed") {
          const decoded = Schema.decodeUnknownOption(DisputeObject)(data.object)
          if (Option.isNone(decoded)) return false
          payment = decoded.value.payment
          // Only a lost dispute moves money; an open or won one records the payment alone.
          if (decoded.value.dispute.status === "lost") {
            refund = { amountMinor: decoded.value.dispute.amount_minor, reason: CARDGW_DISPUTE_REASON }
          }
        } else {
          return false
        }
        const live = yield* sessions.liveForAccount("cardgw", accountId)
        // One record per profile holding the account (a profile holds it once).
        const profiles = new Map(live.map((connection) => [connection.profile_id, connection] as const))
        for (const connection of profiles.values()) {
          yield* record(yield* profileOf(connection.profile_id, connection.workspace_id), payment, refund)
        }
        return true
      })

      return { record, sync, hook }
    })
  ).pipe(Layer.provide([PaymentsService.layer, ConnectionRecords.layer, ConnectionSessions.layer, SyncJobsRepo.layer]))
}
