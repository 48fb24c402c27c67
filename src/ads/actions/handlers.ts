import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal, type PrincipalShape, type ProfileContext } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { AdActions } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { AdActionsApi } from "./api.ts"

export const AdActionsHandlers = HttpApiBuilder.group(groupApi(AdActionsApi), "adActions", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const actions = yield* AdActions
    const caller = Effect.flatMap(Principal, (actor) => Effect.map(access.current, (profile) => ({ actor, profile })))
    // The service answers the ledger entry itself (a recommendation's apply and the URL-tag undo
    // reuse it); the route puts it in `data` like every success body (api-concepts.md, Conventions).
    const answer = <A, E, R>(effect: (c: { actor: PrincipalShape; profile: ProfileContext }) => Effect.Effect<A, E, R>) =>
      Effect.flatMap(caller, (c) => Effect.map(effect(c), (data) => ({ data })))
    return handlers.handleAll({
      pauseAd: ({ params }) => answer(({ actor, profile }) => actions.pauseAd(actor, profile, params.id)),
      resumeAd: ({ params }) => answer(({ actor, profile }) => actions.resumeAd(actor, profile, params.id)),
      adSetBudget: ({ params, payload }) => answer(({ actor, profile }) => actions.adSetBudget(actor, profile, params.id, payload)),
      campaignStatus: ({ params }) =>
        Effect.flatMap(access.current, (profile) => Effect.map(actions.campaignStatus(profile, params.id), (data) => ({ data }))),
      pauseCampaign: ({ params }) => answer(({ actor, profile }) => actions.pauseCampaign(actor, profile, params.id)),
      resumeCampaign: ({ params }) => answer(({ actor, profile }) => actions.resumeCampaign(actor, profile, params.id)),
      campaignBudget: ({ params, payload }) => answer(({ actor, profile }) => actions.campaignBudget(actor, profile, params.id, payload)),
      rollbackAction: ({ params }) => answer(({ actor, profile }) => actions.rollback(actor, profile, params.action_id))
    })
  })).pipe(Layer.provide([AdActions.layer, ProfileAccess.layer]))
