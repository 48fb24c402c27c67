import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { ConnectionSync } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { ConnectionSyncApi } from "./api.ts"

export const ConnectionSyncHandlers = HttpApiBuilder.group(groupApi(ConnectionSyncApi), "connectionSync", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const sync = yield* ConnectionSync
    return handlers.handleAll({
      triggerSync: ({ payload }) =>
        Effect.flatMap(access.current, (profile) => Effect.map(sync.trigger(profile, payload), (data) => ({ data }))),
      listSyncJobs: ({ query }) => Effect.flatMap(access.current, (profile) => sync.list(profile, query)),
      syncProgress: ({ params }) =>
        Effect.flatMap(access.current, (profile) => Effect.map(sync.progress(profile, params.job_id), (data) => ({ data })))
    })
  })).pipe(Layer.provide([ConnectionSync.layer, ProfileAccess.layer]))
