/** `GET /api/v1/me`: the credential's own view of itself (an app, a key, or a signed-in person). */
import { Context, Effect, Layer, Option } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { Me, MyProfile } from "../../../schema/me.ts"
import { scopesOfMembership } from "../../../schema/members.ts"
import { AdminRepo } from "../admin/repo.ts"
import { effectiveReturnOrigins } from "../admin/service.ts"
import { PeopleRepo } from "../people/repo.ts"
import { MeRepo } from "./repo.ts"
import type { PrincipalShape } from "../../kernel/principal.ts"

/** An API key's answer: what authentication already resolved, nothing to query. */
export const keyView = (principal: Extract<PrincipalShape, { readonly kind: "api_key" }>): Me => ({
  kind: "api_key",
  key: {
    id: principal.keyId,
    profile_id: principal.profileId,
    workspace_id: principal.workspaceId,
    scopes: principal.scopes,
    rate_limit_per_minute: principal.rateLimitPerMinute,
    oauth_app_id: principal.oauthAppId
  }
})

export class MeService extends Context.Service<MeService, {
  /** None when the principal's record vanished since it authenticated (a deleted app, a removed user). */
  readonly describe: (principal: PrincipalShape) => Effect.Effect<Option.Option<Me>, DatabaseUnavailable>
  /** The profiles a signed-in person reaches, with the scopes their membership allows on each (issue 33). */
  readonly profiles: (userId: string) => Effect.Effect<ReadonlyArray<MyProfile>, DatabaseUnavailable>
}>()("svc/MeService") {
  static readonly layer = Layer.effect(MeService)(
    Effect.gen(function*() {
      const apps = yield* AdminRepo
      const people = yield* PeopleRepo
      const mine = yield* MeRepo

      const describeStored = Effect.fn("MeService.describe")(function*(principal: PrincipalShape) {
        switch (principal.kind) {
          case "app_client": {
            const app = yield* apps.findApp(principal.appId)
            return Option.map(app, (row): Me => ({
              kind: "app_client",
              app: { id: row.id, client_id: row.client_id, name: row.name, rate_tier: row.rate_tier },
              return_url_supported: effectiveReturnOrigins(row)
            }))
          }
          case "api_key":
            return Option.some(keyView(principal))
          case "session": {
            const user = yield* people.find(principal.userId)
            return Option.map(user, (row): Me => ({ kind: "session", user: row }))
          }
          default:
            return Option.none()
        }
      })

      // An API key's answer is what authentication already resolved: nothing to query, so it skips
      // the traced Effect.fn (a stack capture and a span on every call; decision 0027).
      const describe = (principal: PrincipalShape): Effect.Effect<Option.Option<Me>, DatabaseUnavailable> =>
        principal.kind === "api_key" ? Effect.succeed(Option.some(keyView(principal))) : describeStored(principal)
      const profiles = Effect.fn("MeService.profiles")(function*(userId: string) {
        const rows = yield* mine.reachableProfiles(userId)
        return rows.map(({ permissions, ...row }): MyProfile => ({
          ...row,
          scopes: scopesOfMembership({ workspaceRole: row.workspace_role, profileRole: row.profile_role, permissions })
        }))
      })
      return { describe, profiles }
    })
  ).pipe(Layer.provide([AdminRepo.layer, PeopleRepo.layer, MeRepo.layer]))
}
