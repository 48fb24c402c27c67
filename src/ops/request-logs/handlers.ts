import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { groupApi } from "../../http/group-api.ts"
import { RequestLogsApi } from "./api.ts"
import { RequestLogs } from "./service.ts"

export const RequestLogsHandlers = HttpApiBuilder.group(groupApi(RequestLogsApi), "requestLogs", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const logs = yield* RequestLogs
    return handlers.handleAll({
      list: ({ query }) => Effect.flatMap(access.current, (profile) => logs.list(profile, query))
    })
  })).pipe(Layer.provide([RequestLogs.layer, ProfileAccess.layer]))
