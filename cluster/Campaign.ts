/**
 * The Campaign entity: one instance per campaign (the ad platform's id); its messages (pause,
 * resume, budget, rollback) run one at a time, like the AdSet entity's (decision 0068).
 */
import { Effect } from "effect"
import { AdActionEngine } from "../src/ads/actions/engine.ts"
import { Campaign } from "../src/ads/actions/entities.ts"

export const CampaignLayer = Campaign.toLayer(
  Effect.gen(function*() {
    const engine = yield* AdActionEngine
    return Campaign.of({ Act: ({ payload }) => engine.execute(payload) })
  })
)
