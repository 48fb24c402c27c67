/**
 * The Campaign entity: one instance per campaign (the ad platform's id); its messages (pause,
 * resume, budget, rollback) run one at a time, like the AdSet entity's (decision 0068).
 */
import { Effect } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { ActionCommand, ActionError, ActionOutcome, AdActionEngine } from "../src/ads/actions/engine.ts"

export const ActOnCampaign = Rpc.make("Act", { payload: ActionCommand, success: ActionOutcome, error: ActionError })

export const Campaign = Entity.make("Campaign", [ActOnCampaign])

export const CampaignLive = Campaign.toLayer(
  Effect.gen(function*() {
    const engine = yield* AdActionEngine
    return Campaign.of({ Act: ({ payload }) => engine.execute(payload) })
  })
)
