import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { CommerceAppKillSwitch } from "./kill-switch.ts"
import { AdminService } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { AdminApi } from "./api.ts"

export const AdminHandlers = HttpApiBuilder.group(groupApi(AdminApi), "admin", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* AdminService
    const killSwitch = yield* CommerceAppKillSwitch
    return handlers.handleAll({
      createOAuthApp: ({ payload }) =>
        Effect.flatMap(Principal, (actor) => Effect.map(admin.createApp(actor, payload), (data) => ({ data }))),
      listOAuthApps: ({ query }) => admin.listApps(query),
      getOAuthApp: ({ params }) => Effect.map(admin.getApp(params.id), (data) => ({ data })),
      updateOAuthApp: ({ params, payload }) =>
        Effect.flatMap(Principal, (actor) => Effect.map(admin.updateApp(actor, params.id, payload), (data) => ({ data }))),
      deleteOAuthApp: ({ params }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.map(admin.deleteApp(actor, params.id), (result) => ({
            data: { id: params.id, deleted: true as const, revoked_keys: result.revokedKeys }
          }))),
      rotateClientSecret: ({ params }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.map(admin.rotateClientSecret(actor, params.id), (rotated) => ({
            data: { id: params.id, client_id: rotated.clientId, client_secret: rotated.clientSecret }
          }))),
      rotateJwtSecret: ({ params }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.map(admin.rotateJwtSecret(actor, params.id), (jwtSecret) => ({
            data: { id: params.id, jwt_secret: jwtSecret }
          }))),
      updateWorkspace: ({ params, payload }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.map(admin.setHealthcareAgency(actor, params.workspaceId, payload.is_healthcare_agency), (data) => ({ data }))),
      listCommerceApps: () => Effect.map(admin.listCommerceApps, (data) => ({ data })),
      createCommerceApp: ({ payload }) =>
        Effect.flatMap(Principal, (actor) => Effect.map(admin.createCommerceApp(actor, payload), (data) => ({ data }))),
      deleteCommerceApp: ({ params }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.as(killSwitch.disable(actor, params.id), { data: { id: params.id, disabled: true as const } }))
    })
  })).pipe(Layer.provide([AdminService.layer, CommerceAppKillSwitch.layer]))
