/**
 * The AdSet entity: one instance per ad set (the ad platform's id). Its messages run one at a
 * time, so every write to one ad set (its budget, its ads' statuses, a rollback of either) reads
 * the live object after the previous write settled: two concurrent budget changes are applied
 * one after the other, never both against the same stale budget (issue 19, decision 0068).
 * Not persisted: a message lost with its runner was never answered, and the client's retry
 * with the same Idempotency-Key runs it again.
 */
import { Effect } from "effect"
import { AdActionEngine } from "../src/ads/actions/engine.ts"
import { AdSet } from "../src/ads/actions/entities.ts"

export const AdSetLayer = AdSet.toLayer(
  Effect.gen(function*() {
    const engine = yield* AdActionEngine
    return AdSet.of({ Act: ({ payload }) => engine.execute(payload) })
  })
)
