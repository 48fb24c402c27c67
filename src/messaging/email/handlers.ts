import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { Mailbox } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { EmailApi } from "./api.ts"

export const EmailHandlers = HttpApiBuilder.group(groupApi(EmailApi), "email", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const mailbox = yield* Mailbox
    return handlers.handleAll({
      listThreads: ({ query }) => Effect.flatMap(access.current, (profile) => mailbox.threads(profile, query)),
      getThread: ({ params }) => Effect.flatMap(access.current, (profile) => Effect.map(mailbox.thread(profile, params.threadId), (data) => ({ data }))),
      createDraft: ({ payload }) => Effect.flatMap(access.current, (profile) => Effect.map(mailbox.createDraft(profile, payload), (data) => ({ data }))),
      listLabels: () => Effect.flatMap(access.current, (profile) => Effect.map(mailbox.labels(profile), (data) => ({ data }))),
      searchEmail: ({ query }) => Effect.flatMap(access.current, (profile) => mailbox.search(profile, query))
    })
  })).pipe(Layer.provide([Mailbox.layer, ProfileAccess.layer]))
