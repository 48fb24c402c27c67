/**
 * Declared sources for the partner route (src/ingestion/partner, decision 0033): one answer per
 * customer, idempotent on `wamid`. Each method runs in the caller's transaction (the repository
 * joins it), so the route's lock, read and write stay one transaction with its touch.
 */
import { Context, Effect, Layer, type Option } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { DeclaredSourcesRepo, type NewAnswer, type StoredAnswer } from "./repo.ts"

export type { NewAnswer, StoredAnswer } from "./repo.ts"

type Op<A> = Effect.Effect<A, DatabaseUnavailable>

export class DeclaredSources extends Context.Service<DeclaredSources, {
  /** Serialises declared-source requests of one `wamid` until the transaction ends. */
  readonly lockWamid: (profileId: string, wamid: string) => Op<void>
  readonly answerByWamid: (profileId: string, wamid: string) => Op<Option.Option<StoredAnswer>>
  readonly answerByCustomer: (customerId: string) => Op<Option.Option<StoredAnswer>>
  readonly insertAnswer: (answer: NewAnswer) => Op<void>
}>()("svc/DeclaredSources") {
  static readonly layer = Layer.effect(DeclaredSources)(
    Effect.gen(function*() {
      const repo = yield* DeclaredSourcesRepo
      return {
        lockWamid: Effect.fn("DeclaredSources.lockWamid")(function*(profileId: string, wamid: string) {
          yield* repo.lockWamid(profileId, wamid)
        }),
        answerByWamid: Effect.fn("DeclaredSources.answerByWamid")(function*(profileId: string, wamid: string) {
          return yield* repo.answerByWamid(profileId, wamid)
        }),
        answerByCustomer: Effect.fn("DeclaredSources.answerByCustomer")(function*(customerId: string) {
          return yield* repo.answerByCustomer(customerId)
        }),
        insertAnswer: Effect.fn("DeclaredSources.insertAnswer")(function*(answer: NewAnswer) {
          yield* repo.insertAnswer(answer)
        })
      }
    })
  ).pipe(Layer.provide(DeclaredSourcesRepo.layer))
}
