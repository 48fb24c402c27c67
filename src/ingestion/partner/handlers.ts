import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { parseJsonOrUndefined } from "../../platform/json.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { PartnerData } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { PartnerDataApi } from "./api.ts"

export const PartnerDataHandlers = HttpApiBuilder.group(groupApi(PartnerDataApi), "partnerData", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const partner = yield* PartnerData
    return handlers.handleAll({
      recordAdReferrals: ({ payload }) =>
        Effect.gen(function*() {
          return { data: yield* partner.recordReferrals(yield* access.current, payload) }
        }),
      previewAdReferrals: ({ payload }) =>
        Effect.gen(function*() {
          return { data: yield* partner.previewReferrals(yield* access.current, payload) }
        }),
      declareSource: ({ payload, request }) =>
        Effect.gen(function*() {
          // The whole body as sent (already buffered by the payload decoder): fields the contract
          // does not name are looked at too, for a national id.
          const raw = parseJsonOrUndefined(yield* Effect.orDie(request.text))
          const { result, replayed } = yield* partner.declareSource(yield* access.current, payload, raw)
          if (result.recorded && result.reason === null && !replayed) {
            return { data: { ...result, recorded: true as const, reason: null }, meta: { replayed: false as const } }
          }
          return { data: result, meta: { replayed } }
        })
    })
  })).pipe(Layer.provide([PartnerData.layer, ProfileAccess.layer]))
