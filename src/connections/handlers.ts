import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../http/api.ts"
import { decodeCursor, DEFAULT_PAGE_SIZE, toPage } from "../platform/pagination.ts"
import { ProfileAccess } from "../tenancy/access.ts"
import { ConnectionsRepo } from "./repo.ts"

export const ConnectionsHandlers = HttpApiBuilder.group(Api, "connections", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const repo = yield* ConnectionsRepo
    return handlers.handleAll({
      listConnections: ({ query }) =>
        Effect.gen(function*() {
          const profile = yield* access.current
          const limit = query.limit ?? DEFAULT_PAGE_SIZE
          const rows = yield* repo.list(profile.profileId, limit, decodeCursor(query.cursor))
          return toPage(rows, limit, (row) => row)
        })
    })
  })).pipe(Layer.provide([ConnectionsRepo.layer, ProfileAccess.layer]))
