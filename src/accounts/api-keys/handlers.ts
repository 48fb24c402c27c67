import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ApiKeysService } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { ApiKeysApi } from "./api.ts"

/** `meta.withheld_scopes` only when the healthcare rule left something out. */
const withheldMeta = (withheld: ReadonlyArray<string>) =>
  withheld.length === 0 ? {} : { meta: { withheld_scopes: withheld } }

export const ApiKeysHandlers = HttpApiBuilder.group(groupApi(ApiKeysApi), "apiKeys", (handlers) =>
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeysService
    return handlers.handleAll({
      listApiKeys: ({ params, query }) =>
        Effect.flatMap(Principal, (actor) => apiKeys.list(actor, params.workspaceId, query)),
      createApiKey: ({ params, payload }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.map(apiKeys.create(actor, params.workspaceId, payload), (created) => ({
            data: { ...created.key, key: created.plaintext },
            ...withheldMeta(created.withheld)
          }))),
      updateApiKey: ({ params, payload }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.map(apiKeys.update(actor, params.workspaceId, params.keyId, payload), (edited) => ({
            data: edited.key,
            ...withheldMeta(edited.withheld)
          }))),
      deleteApiKey: ({ params }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.map(apiKeys.revoke(actor, params.workspaceId, params.keyId, "delete"), (data) => ({ data }))),
      revokeApiKey: ({ params }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.map(apiKeys.revoke(actor, params.workspaceId, params.keyId, "revoke"), (data) => ({ data }))),
      rotateApiKey: ({ params }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.map(apiKeys.rotate(actor, params.workspaceId, params.keyId), (rotated) => ({
            data: { ...rotated.key, key: rotated.plaintext },
            meta: {
              rotated_from: rotated.previous,
              ...(rotated.withheld.length === 0 ? {} : { withheld_scopes: rotated.withheld })
            }
          })))
    })
  })).pipe(Layer.provide(ApiKeysService.layer))
