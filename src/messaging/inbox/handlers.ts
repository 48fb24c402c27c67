import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { Inbox } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { InboxApi } from "./api.ts"

export const InboxHandlers = HttpApiBuilder.group(groupApi(InboxApi), "inbox", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const inbox = yield* Inbox
    const data = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.map(effect, (item) => ({ data: item }))
    const id = (params: { readonly conversationId: string }) => params.conversationId.toLowerCase()
    return handlers.handleAll({
      listConversations: ({ query }) => Effect.flatMap(access.current, (profile) => inbox.list(profile, query)),
      getConversation: ({ params }) => Effect.flatMap(access.current, (profile) => data(inbox.get(profile, id(params)))),
      replyConversation: ({ params, payload }) => Effect.flatMap(access.current, (profile) => data(inbox.reply(profile, id(params), payload))),
      draftConversation: ({ params, payload }) => Effect.flatMap(access.current, (profile) => data(inbox.draft(profile, id(params), payload))),
      setConversationLabels: ({ params, payload }) =>
        Effect.flatMap(access.current, (profile) => data(inbox.setLabels(profile, id(params), payload))),
      linkConversationCustomer: ({ params, payload }) =>
        Effect.flatMap(access.current, (profile) => data(inbox.linkCustomer(profile, id(params), payload))),
      unlinkConversationCustomer: ({ params }) => Effect.flatMap(access.current, (profile) => data(inbox.unlinkCustomer(profile, id(params)))),
      listExtractionProposals: ({ params }) => Effect.flatMap(access.current, (profile) => data(inbox.proposals(profile, id(params)))),
      decideExtractionProposal: ({ params, payload }) =>
        Effect.flatMap(access.current, (profile) => data(inbox.decide(profile, params.proposalId.toLowerCase(), payload)))
    })
  })).pipe(Layer.provide([Inbox.layer, ProfileAccess.layer]))
