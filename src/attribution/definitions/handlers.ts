import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { Definitions, type Written } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { DefinitionsApi } from "./api.ts"

/** 201 with `meta.created: true` when the definition was created, 200 otherwise. */
const upserted = (written: Written) =>
  written.created
    ? { data: written.definition, meta: { created: true as const, replay_job_id: written.replayJobId } }
    : { data: written.definition, meta: { created: false as const, replay_job_id: written.replayJobId } }

const edited = (written: Written) => ({ data: written.definition, meta: { replay_job_id: written.replayJobId } })

export const DefinitionsHandlers = HttpApiBuilder.group(groupApi(DefinitionsApi), "definitions", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const definitions = yield* Definitions
    /** The caller and the profile it acts on. */
    const caller = Effect.flatMap(Principal, (actor) => Effect.map(access.current, (profile) => ({ actor, profile })))
    return handlers.handleAll({
      listGoalDefinitions: ({ query }) => Effect.flatMap(access.current, (profile) => definitions.list(profile, query)),
      upsertGoalDefinition: ({ payload }) =>
        Effect.flatMap(caller, ({ actor, profile }) => Effect.map(definitions.upsert(actor, profile, payload), upserted)),
      patchGoalDefinition: ({ params, payload }) =>
        Effect.flatMap(caller, ({ actor, profile }) => Effect.map(definitions.patch(actor, profile, params.id, payload), edited)),
      createGoal: ({ payload }) =>
        Effect.flatMap(caller, ({ actor, profile }) => Effect.map(definitions.upsertLegacy(actor, profile, payload), upserted)),
      getOutcomeDefinitions: () =>
        Effect.flatMap(access.current, (profile) => Effect.map(definitions.outcomeDefinitions(profile), (data) => ({ data }))),
      putOutcomeDefinitions: ({ payload }) =>
        Effect.flatMap(caller, ({ actor, profile }) =>
          Effect.map(definitions.replaceOutcomeDefinitions(actor, profile, payload), (replaced) => ({
            data: replaced.data,
            meta: { replay_job_id: replaced.replayJobId }
          }))),
      patchOutcomeDefinition: ({ params, payload }) =>
        Effect.flatMap(caller, ({ actor, profile }) =>
          Effect.map(definitions.setEventKey(actor, profile, params.id, payload.event_key), edited))
    })
  })).pipe(Layer.provide([Definitions.layer, ProfileAccess.layer]))
