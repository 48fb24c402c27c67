/**
 * What other contexts do to touches: a merge moves a customer's touches and its undo puts them
 * back, an accepted identity link binds a browser's touches, an erasure forgets them. Each runs
 * in the caller's transaction (the repository joins it).
 */
import { Context, Effect, Layer } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { type NewPartnerTouch, type NewWebTouch, TouchesRepo, type VisitorBinding } from "./repo.ts"

// The input types of ingestion's inserts below, for the callers that build them.
export type { NewPartnerTouch, NewWebTouch } from "./repo.ts"

type Op<A> = Effect.Effect<A, DatabaseUnavailable>

export class Touches extends Context.Service<Touches, {
  /** A merge: the merged customer's touches go to the survivor; answers their ids. */
  readonly moveToCustomer: (fromCustomerId: string, toCustomerId: string) => Op<ReadonlyArray<string>>
  /** A merge's undo: these touches go back to the merged customer while the survivor still holds them. */
  readonly returnToCustomer: (touchIds: ReadonlyArray<string>, fromCustomerId: string, toCustomerId: string) => Op<void>
  /** Binds one browser's unbound touches of the profile to the customer (an accepted identity link); answers how many. */
  readonly bindVisitor: (
    profileId: string,
    anonymousId: string,
    customerId: string,
    joinMethod: "click_id" | "anonymous_id"
  ) => Op<number>
  /** Erasure: the customers' touches, and the other touches of their browsers, lose their person; answers how many. */
  readonly forgetCustomers: (customerIds: ReadonlyArray<string>) => Op<number>
  /** One web tracker touch (src/ingestion/tracking/tracker); None when an event with the same id was stored before. */
  readonly insertWebTouch: TouchesRepo["Service"]["insertWebTouch"]
  /** Partner touches (src/ingestion/partner), one statement; a key already taken is skipped. Answers the keys inserted. */
  readonly insertPartnerTouches: TouchesRepo["Service"]["insertPartnerTouches"]
  /** Binds the unbound touches of these browsers to their customers; answers the customers that got a touch, each once. */
  readonly bindVisitors: TouchesRepo["Service"]["bindVisitors"]
}>()("svc/Touches") {
  static readonly layer = Layer.effect(Touches)(
    Effect.gen(function*() {
      const repo = yield* TouchesRepo
      return {
        moveToCustomer: Effect.fn("Touches.moveToCustomer")(function*(fromCustomerId: string, toCustomerId: string) {
          return yield* repo.moveToCustomer(fromCustomerId, toCustomerId)
        }),
        returnToCustomer: Effect.fn("Touches.returnToCustomer")(
          function*(touchIds: ReadonlyArray<string>, fromCustomerId: string, toCustomerId: string) {
            yield* repo.returnToCustomer(touchIds, fromCustomerId, toCustomerId)
          }
        ),
        bindVisitor: Effect.fn("Touches.bindVisitor")(
          function*(profileId: string, anonymousId: string, customerId: string, joinMethod: "click_id" | "anonymous_id") {
            return yield* repo.bindVisitor(profileId, anonymousId, customerId, joinMethod)
          }
        ),
        forgetCustomers: Effect.fn("Touches.forgetCustomers")(function*(customerIds: ReadonlyArray<string>) {
          return yield* repo.forgetCustomers(customerIds)
        }),
        insertWebTouch: Effect.fn("Touches.insertWebTouch")(function*(touch: NewWebTouch) {
          return yield* repo.insertWebTouch(touch)
        }),
        insertPartnerTouches: Effect.fn("Touches.insertPartnerTouches")(function*(touches: ReadonlyArray<NewPartnerTouch>) {
          return yield* repo.insertPartnerTouches(touches)
        }),
        bindVisitors: Effect.fn("Touches.bindVisitors")(function*(visitors: ReadonlyArray<VisitorBinding>) {
          return yield* repo.bindVisitors(visitors)
        })
      }
    })
  ).pipe(Layer.provide(TouchesRepo.layer))
}
