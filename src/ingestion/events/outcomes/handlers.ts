import { Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../../kernel/principal.ts"
import { ProfileAccess } from "../../../kernel/access.ts"
import { rawValueLiteral } from "../../../kernel/money.ts"
import { OutcomeReplay } from "../replay/service.ts"
import { EventsService } from "./service.ts"
import { groupApi } from "../../../http/group-api.ts"
import { EventsApi } from "./api.ts"

export const EventsHandlers = HttpApiBuilder.group(groupApi(EventsApi), "events", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const events = yield* EventsService
    const replay = yield* OutcomeReplay
    return handlers.handleAll({
      ingestEvent: ({ payload, request }) =>
        Effect.gen(function*() {
          const profile = yield* access.current
          // A JSON number has lost digits once parsed: re-read its literal from the raw body
          // (already buffered by the payload decoder, so this reads no socket).
          const literal = typeof payload.properties?.value === "number"
            ? yield* Effect.map(Effect.orDie(request.text), rawValueLiteral)
            : Option.none<string>()
          return yield* events.ingest(profile, payload, literal)
        }),
      retractEvent: ({ payload }) =>
        Effect.gen(function*() {
          const actor = yield* Principal
          const profile = yield* access.current
          return { data: yield* events.retract(actor, profile, payload.idempotency_key, payload.reason) }
        }),
      listConversions: ({ query }) => Effect.flatMap(access.current, (profile) => events.listConversions(profile, query)),
      replayOutcomes: ({ query }) =>
        Effect.flatMap(Principal, (principal) => Effect.flatMap(access.current, (profile) => replay.list(principal, profile, query)))
    })
  })).pipe(Layer.provide([EventsService.layer, OutcomeReplay.layer, ProfileAccess.layer]))
