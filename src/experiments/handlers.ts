import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../kernel/access.ts"
import { groupApi } from "../http/group-api.ts"
import { ExperimentsApi } from "./api.ts"
import { Experiments } from "./service.ts"

/** Single answers ride in `data`, as every success body does (api-concepts.md, Conventions). */
const wrap = <A>(data: A) => ({ data })

export const ExperimentsHandlers = HttpApiBuilder.group(groupApi(ExperimentsApi), "experiments", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const experiments = yield* Experiments
    return handlers.handleAll({
      createExperiment: ({ payload }) => Effect.flatMap(access.current, (profile) => Effect.map(experiments.create(profile, payload), wrap)),
      listExperiments: ({ query }) => Effect.flatMap(access.current, (profile) => experiments.list(profile, query)),
      designExperiment: ({ payload }) => Effect.flatMap(access.current, (profile) => Effect.map(experiments.design(profile, payload), wrap)),
      getExperiment: ({ params }) => Effect.flatMap(access.current, (profile) => Effect.map(experiments.get(profile, params.id), wrap)),
      startExperiment: ({ params }) => Effect.flatMap(access.current, (profile) => Effect.map(experiments.start(profile, params.id), wrap)),
      stopExperiment: ({ params, payload }) =>
        Effect.flatMap(access.current, (profile) => Effect.map(experiments.stop(profile, params.id, payload.reason, payload.note ?? null), wrap)),
      experimentResults: ({ params }) => Effect.flatMap(access.current, (profile) => Effect.map(experiments.results(profile, params.id), wrap))
    })
  })).pipe(Layer.provide([Experiments.layer, ProfileAccess.layer]))
