import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { AttributionJobs } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { AttributionApi } from "./api.ts"

export const AttributionHandlers = HttpApiBuilder.group(groupApi(AttributionApi), "attribution", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const jobs = yield* AttributionJobs
    return handlers.handleAll({
      recompute: () =>
        Effect.flatMap(Principal, (actor) =>
          Effect.flatMap(access.current, (profile) =>
            Effect.map(jobs.recompute(actor, profile), (recomputed) => ({
              data: recomputed.job,
              meta: { coalesced: recomputed.coalesced }
            })))),
      replayStatus: () => Effect.flatMap(access.current, (profile) => Effect.map(jobs.replayStatus(profile), (data) => ({ data })))
    })
  })).pipe(Layer.provide([AttributionJobs.layer, ProfileAccess.layer]))
