import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../auth/principal.ts"
import { Api } from "../../http/api.ts"
import { ProfileAccess } from "../../tenancy/access.ts"
import { AdActions } from "./service.ts"

export const AdActionsHandlers = HttpApiBuilder.group(Api, "adActions", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const actions = yield* AdActions
    const caller = Effect.flatMap(Principal, (actor) => Effect.map(access.current, (profile) => ({ actor, profile })))
    return handlers.handleAll({
      pauseAd: ({ params }) => Effect.flatMap(caller, ({ actor, profile }) => actions.pauseAd(actor, profile, params.id)),
      resumeAd: ({ params }) => Effect.flatMap(caller, ({ actor, profile }) => actions.resumeAd(actor, profile, params.id)),
      adSetBudget: ({ params, payload }) =>
        Effect.flatMap(caller, ({ actor, profile }) => actions.adSetBudget(actor, profile, params.id, payload)),
      campaignStatus: ({ params }) => Effect.flatMap(access.current, (profile) => actions.campaignStatus(profile, params.id)),
      pauseCampaign: ({ params }) => Effect.flatMap(caller, ({ actor, profile }) => actions.pauseCampaign(actor, profile, params.id)),
      resumeCampaign: ({ params }) => Effect.flatMap(caller, ({ actor, profile }) => actions.resumeCampaign(actor, profile, params.id)),
      campaignBudget: ({ params, payload }) =>
        Effect.flatMap(caller, ({ actor, profile }) => actions.campaignBudget(actor, profile, params.id, payload)),
      rollbackAction: ({ params }) => Effect.flatMap(caller, ({ actor, profile }) => actions.rollback(actor, profile, params.action_id))
    })
  })).pipe(Layer.provide([AdActions.layer, ProfileAccess.layer]))
