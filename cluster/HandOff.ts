/** The HandOff entity's behaviour: a consent runs through the hand-offs service (src/connections/handoffs/entity.ts says why it is an entity). */
import { Effect, Layer } from "effect"
import { Entity } from "effect/cluster"
import { HandOff } from "../src/connections/handoffs/entity.ts"
import { Handoffs } from "../src/connections/handoffs/service.ts"

export const HandOffLayer = HandOff.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const handoffs = yield* Handoffs
    return HandOff.of({
      Consent: ({ payload }) => handoffs.consent(address.entityId, payload)
    })
  })
).pipe(Layer.provide(Handoffs.layer))
