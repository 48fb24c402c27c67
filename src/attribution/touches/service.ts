/**
 * What other contexts do to touches: a merge moves a customer's touches and its undo puts them
 * back, an accepted identity link binds a browser's touches, an erasure forgets them. Each runs
 * in the caller's transaction (the repository joins it). The tracker's touches are the exception:
 * they are written with group commit (below), in the writers' own transactions.
 */
import { Context, Effect, Exit, Layer, Option } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { groupCommit } from "../../platform/group-commit.ts"
import { type NewPartnerTouch, type NewWebTouch, TouchesRepo, type VisitorBinding, type WebTouchRow } from "./repo.ts"

// The input types of ingestion's inserts below, for the callers that build them.
export type { NewPartnerTouch, NewWebTouch } from "./repo.ts"

type Op<A> = Effect.Effect<A, DatabaseUnavailable>

/** Writers at once (each holds one pooled connection while it writes), most touches a statement, and the queue's room. */
const WEB_TOUCH_WRITERS = 2
const WEB_TOUCH_BATCH = 256
const WEB_TOUCH_QUEUE = 4096

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
  /**
   * One web tracker touch (src/ingestion/tracking/tracker), answered once committed; None when an
   * event with the same id was stored before.
   */
  readonly insertWebTouch: (touch: NewWebTouch) => Op<Option.Option<string>>
  /** Partner touches (src/ingestion/partner), one statement; a key already taken is skipped. Answers the keys inserted. */
  readonly insertPartnerTouches: TouchesRepo["Service"]["insertPartnerTouches"]
  /** Binds the unbound touches of these browsers to their customers; answers the customers that got a touch, each once. */
  readonly bindVisitors: TouchesRepo["Service"]["bindVisitors"]
}>()("svc/Touches") {
  static readonly layer = Layer.effect(Touches)(
    Effect.gen(function*() {
      const repo = yield* TouchesRepo

      // Group commit of tracker touches, as outcomes have it (decision 0140): touches that arrive
      // while the writers are busy share one statement and one commit, instead of a commit each.
      const submitWebTouch = yield* groupCommit({
        writers: WEB_TOUCH_WRITERS,
        maxBatch: WEB_TOUCH_BATCH,
        capacity: WEB_TOUCH_QUEUE,
        write: (batch: ReadonlyArray<WebTouchRow>) =>
          repo.insertWebTouches(batch).pipe(
            Effect.map((inserted) => batch.map((row) => Exit.succeed(inserted.has(row.id) ? Option.some(row.id) : Option.none<string>()))),
            Effect.withSpan("Touches.insertWebTouchBatch", { attributes: { "svc.touches.batch_size": batch.length } })
          ),
        batchFailed: "a tracker touch batch failed; writing its touches one at a time"
      })

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
          return yield* submitWebTouch({ id: crypto.randomUUID(), touch })
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
