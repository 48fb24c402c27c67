import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../kernel/principal.ts"
import { ProfileAccess } from "../kernel/access.ts"
import { IdentityService } from "./service.ts"
import { groupApi } from "../http/group-api.ts"
import { IdentityApi } from "./api.ts"

export const IdentityHandlers = HttpApiBuilder.group(groupApi(IdentityApi), "identity", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const identity = yield* IdentityService
    const caller = Effect.flatMap(Principal, (actor) => Effect.map(access.current, (profile) => ({ actor, profile })))
    return handlers.handleAll({
      scanMergeProposals: () =>
        Effect.map(Effect.flatMap(caller, ({ actor, profile }) => identity.scan(actor, profile)), (data) => ({ data })),
      listMergeProposals: ({ query }) => Effect.flatMap(access.current, (profile) => identity.list(profile, query)),
      previewMergeProposal: ({ params }) =>
        Effect.map(Effect.flatMap(access.current, (profile) => identity.previewProposal(profile, params.id)), (data) => ({ data })),
      decideMergeProposal: ({ params, payload }) =>
        Effect.flatMap(caller, ({ actor, profile }) => identity.decide(actor, profile, params.id, payload)),
      mergeHistory: ({ query }) =>
        Effect.map(Effect.flatMap(access.current, (profile) => identity.history(profile, query)), (data) => ({ data })),
      mergePreview: ({ query }) =>
        Effect.map(Effect.flatMap(access.current, (profile) => identity.previewPair(profile, query)), (data) => ({ data })),
      undoMerge: ({ params }) => Effect.flatMap(caller, ({ actor, profile }) => identity.undo(actor, profile, params.auditLogId))
    })
  })).pipe(Layer.provide([IdentityService.layer, ProfileAccess.layer]))
