/**
 * The AdSet and Campaign entities' protocols: one instance per ad set and per campaign (the ad
 * platform's id). Their messages run one at a time, so every write to one ad set or campaign
 * (its budget, its status, a rollback of either) reads the live object after the previous write
 * settled (issue 19, decision 0068). The behaviour is registered by cluster/AdSet.ts and
 * cluster/Campaign.ts; a context calls the entities through these definitions.
 */
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { ActionCommand, ActionError, ActionOutcome } from "./engine.ts"

export const ActOnAdSet = Rpc.make("Act", { payload: ActionCommand, success: ActionOutcome, error: ActionError })

export const AdSet = Entity.make("AdSet", [ActOnAdSet])

export const ActOnCampaign = Rpc.make("Act", { payload: ActionCommand, success: ActionOutcome, error: ActionError })

export const Campaign = Entity.make("Campaign", [ActOnCampaign])
