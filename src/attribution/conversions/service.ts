/**
 * What other contexts do to conversions and outcome events: a merge moves a customer's and its
 * undo puts them back, erasure forgets the person on them, and each change of a customer's
 * payments re-credits and recomputes first payments. Each runs in the caller's transaction
 * (the repository joins it).
 */
import { Context, Effect, Layer } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { EventsRepo } from "./repo.ts"

type Op<A> = Effect.Effect<A, DatabaseUnavailable>

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
  readonly recomputeFirstPayments: (customerIds: ReadonlyArray<string>) => Op<number>
  /** Erasure: the customers' conversions (and payments they were payer of) lose their person; answers how many. */
  readonly forgetConversionsOf: (customerIds: ReadonlyArray<string>) => Op<number>
  /** Erasure: the customers' outcome events lose their person; answers how many. */
  readonly forgetEventsOf: (customerIds: ReadonlyArray<string>) => Op<number>
}>()("svc/Conversions") {
  static readonly layer = Layer.effect(Conversions)(
    Effect.gen(function*() {
      const repo = yield* EventsRepo
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
        recomputeFirstPayments: Effect.fn("Conversions.recomputeFirstPayments")(function*(customerIds: ReadonlyArray<string>) {
          return yield* repo.recomputeFirstPayments(customerIds)
        }),
        forgetConversionsOf: Effect.fn("Conversions.forgetConversionsOf")(function*(customerIds: ReadonlyArray<string>) {
          return yield* repo.forgetConversionsOf(customerIds)
        }),
        forgetEventsOf: Effect.fn("Conversions.forgetEventsOf")(function*(customerIds: ReadonlyArray<string>) {
          return yield* repo.forgetEventsOf(customerIds)
        })
      }
    })
  ).pipe(Layer.provide(EventsRepo.layer))
}
