/**
 * What other contexts do to conversions and outcome events: a merge moves a customer's and its
 * undo puts them back, erasure forgets the person on them, and each change of a customer's
 * payments re-credits and recomputes first payments. Each runs in the caller's transaction
 * (the repository joins it).
 */
import { Context, Effect, Layer } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { CreditsRepo } from "../credits/repo.ts"
import { EventsRepo } from "./repo.ts"
import { traced } from "../../platform/traced.ts"

// The row and input types of ingestion's statements below, for the callers that build or read them.
export type { ConversionFilters, CustomerTime, NewConversion, NewEvent, StoredEvent, WindowConversion } from "./repo.ts"
// The first-payment rules, for an ingest that flags its conversions before inserting them.
export { arrivingAfterStored, firstPaymentsWithAdded, newPaymentsOf } from "./first-payments.ts"

type Op<A> = Effect.Effect<A, DatabaseUnavailable>
type Events = EventsRepo["Service"]

export class Conversions extends Context.Service<Conversions, {
  /** A merge: the merged customer's outcome events go to the survivor; answers their ids. */
  readonly moveEvents: (fromCustomerId: string, toCustomerId: string) => Op<ReadonlyArray<string>>
  /** A merge: the merged customer's conversions, and those it was assigned as payer of, go to the survivor; answers their ids. */
  readonly moveConversions: (
    fromCustomerId: string,
    toCustomerId: string
  ) => Op<{ readonly conversions: ReadonlyArray<string>; readonly payer: ReadonlyArray<string> }>
  /** A merge's undo: these events go back to the merged customer while the survivor still holds them. */
  readonly returnEvents: (eventIds: ReadonlyArray<string>, fromCustomerId: string, toCustomerId: string) => Op<void>
  /** A merge's undo: these conversions and payer assignments go back while the survivor still holds them. */
  readonly returnConversions: (
    conversionIds: ReadonlyArray<string>,
    payerConversionIds: ReadonlyArray<string>,
    fromCustomerId: string,
    toCustomerId: string
  ) => Op<void>
  /** The customers' conversions are credited again by the attribution worker. */
  readonly recreditCustomers: (customerIds: ReadonlyArray<string>) => Op<void>
  /** `recreditCustomers` for one customer of the profile (an accepted identity link); answers how many. */
  readonly recreditCustomer: (profileId: string, customerId: string) => Op<number>
  /** See `EventsRepo.recomputeFirstPayments`: the customers' flags, in the caller's transaction; answers how many changed. */
  readonly recomputeFirstPayments: (profileId: string, customerIds: ReadonlyArray<string>) => Op<number>
  /** Erasure: the customers' conversions (and payments they were payer of) lose their person; answers how many. */
  readonly forgetConversionsOf: (customerIds: ReadonlyArray<string>) => Op<number>
  /** Erasure: the customers' outcome events lose their person; answers how many. */
  readonly forgetEventsOf: (customerIds: ReadonlyArray<string>) => Op<number>
  // Ingestion's statements (src/ingestion/events, partner): outcome events, their conversions, the
  // retraction's steps, re-credit marks and a payment's actions, each documented on the repository.
  readonly profileFacts: Events["profileFacts"]
  readonly claimEvents: Events["claimEvents"]
  readonly findEvent: Events["findEvent"]
  readonly findEvents: Events["findEvents"]
  readonly ingestFacts: Events["ingestFacts"]
  readonly paymentAnchorsOf: Events["paymentAnchorsOf"]
  readonly writeOutcomes: Events["writeOutcomes"]
  readonly requeueConversions: Events["requeueConversions"]
  readonly conversionsInWindow: Events["conversionsInWindow"]
  readonly lockEvent: Events["lockEvent"]
  readonly hasExport: Events["hasExport"]
  readonly hasConversationLead: Events["hasConversationLead"]
  readonly deleteConversions: Events["deleteConversions"]
  readonly tombstone: Events["tombstone"]
  readonly listConversions: Events["listConversions"]
  readonly setInstallment: Events["setInstallment"]
  readonly setPayer: Events["setPayer"]
  /**
   * The payment now belongs to another customer: its credit rows go (src/attribution/credits/repo.ts
   * `clear`) and the payer and owner are set with the payment queued for credit, so the worker credits it again.
   */
  readonly reassignPayment: Events["reassignPayment"]
  readonly setRefund: Events["setRefund"]
  readonly clearRefund: Events["clearRefund"]
}>()("svc/Conversions") {
  static readonly layer = Layer.effect(Conversions)(
    Effect.gen(function*() {
      const repo = yield* EventsRepo
      const credits = yield* CreditsRepo
      return {
        moveEvents: Effect.fn("Conversions.moveEvents")(function*(fromCustomerId: string, toCustomerId: string) {
          return yield* repo.moveEvents(fromCustomerId, toCustomerId)
        }),
        moveConversions: Effect.fn("Conversions.moveConversions")(function*(fromCustomerId: string, toCustomerId: string) {
          return yield* repo.moveConversions(fromCustomerId, toCustomerId)
        }),
        returnEvents: Effect.fn("Conversions.returnEvents")(
          function*(eventIds: ReadonlyArray<string>, fromCustomerId: string, toCustomerId: string) {
            yield* repo.returnEvents(eventIds, fromCustomerId, toCustomerId)
          }
        ),
        returnConversions: Effect.fn("Conversions.returnConversions")(function*(
          conversionIds: ReadonlyArray<string>,
          payerConversionIds: ReadonlyArray<string>,
          fromCustomerId: string,
          toCustomerId: string
        ) {
          yield* repo.returnConversions(conversionIds, payerConversionIds, fromCustomerId, toCustomerId)
        }),
        recreditCustomers: Effect.fn("Conversions.recreditCustomers")(function*(customerIds: ReadonlyArray<string>) {
          yield* repo.recreditCustomers(customerIds)
        }),
        recreditCustomer: Effect.fn("Conversions.recreditCustomer")(function*(profileId: string, customerId: string) {
          return yield* repo.recreditCustomer(profileId, customerId)
        }),
        recomputeFirstPayments: Effect.fn("Conversions.recomputeFirstPayments")(function*(profileId: string, customerIds: ReadonlyArray<string>) {
          return yield* repo.recomputeFirstPayments(profileId, customerIds)
        }),
        forgetConversionsOf: Effect.fn("Conversions.forgetConversionsOf")(function*(customerIds: ReadonlyArray<string>) {
          return yield* repo.forgetConversionsOf(customerIds)
        }),
        forgetEventsOf: Effect.fn("Conversions.forgetEventsOf")(function*(customerIds: ReadonlyArray<string>) {
          return yield* repo.forgetEventsOf(customerIds)
        }),
        profileFacts: traced("Conversions.profileFacts", repo.profileFacts),
        claimEvents: traced("Conversions.claimEvents", repo.claimEvents),
        findEvent: traced("Conversions.findEvent", repo.findEvent),
        findEvents: traced("Conversions.findEvents", repo.findEvents),
        ingestFacts: traced("Conversions.ingestFacts", repo.ingestFacts),
        paymentAnchorsOf: traced("Conversions.paymentAnchorsOf", repo.paymentAnchorsOf),
        writeOutcomes: traced("Conversions.writeOutcomes", repo.writeOutcomes),
        requeueConversions: traced("Conversions.requeueConversions", repo.requeueConversions),
        conversionsInWindow: traced("Conversions.conversionsInWindow", repo.conversionsInWindow),
        lockEvent: traced("Conversions.lockEvent", repo.lockEvent),
        hasExport: traced("Conversions.hasExport", repo.hasExport),
        hasConversationLead: traced("Conversions.hasConversationLead", repo.hasConversationLead),
        deleteConversions: traced("Conversions.deleteConversions", repo.deleteConversions),
        tombstone: traced("Conversions.tombstone", repo.tombstone),
        listConversions: traced("Conversions.listConversions", repo.listConversions),
        setInstallment: traced("Conversions.setInstallment", repo.setInstallment),
        setPayer: traced("Conversions.setPayer", repo.setPayer),
        reassignPayment: Effect.fn("Conversions.reassignPayment")(
          function*(paymentId: string, payerId: string | null, customerId: string | null) {
            yield* credits.clear(paymentId)
            yield* repo.reassignPayment(paymentId, payerId, customerId)
          }
        ),
        setRefund: traced("Conversions.setRefund", repo.setRefund),
        clearRefund: traced("Conversions.clearRefund", repo.clearRefund)
      }
    })
  ).pipe(Layer.provide([EventsRepo.layer, CreditsRepo.layer]))
}
