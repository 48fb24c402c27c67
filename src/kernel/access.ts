/**
 * Which profile a request acts on. An API key is bound to its profile; a user token or a
 * session names one with `?profile_id=`, which the Authentication middleware resolved through
 * the person's membership on profile-grain routes (unknown, archived and unreachable profiles
 * answer the same 404 there).
 */
import { Context, Effect, Layer } from "effect"
import { Principal, type ProfileContext } from "./principal.ts"

export class ProfileAccess extends Context.Service<ProfileAccess, {
  readonly current: Effect.Effect<ProfileContext, never, Principal>
}>()("svc/ProfileAccess") {
  static readonly layer = Layer.succeed(ProfileAccess)({
    current: Effect.flatMap(Principal, (principal) => {
      if (principal.kind === "api_key") {
        return Effect.succeed({
          profileId: principal.profileId,
          workspaceId: principal.workspaceId,
          attributionEnabled: principal.attributionEnabled
        })
      }
      if ((principal.kind === "user_token" || principal.kind === "session" || principal.kind === "service") && principal.profile !== undefined) {
        return Effect.succeed(principal.profile)
      }
      // Only profile-grain operations ask; their policy makes the middleware resolve the profile.
      return Effect.die(`ProfileAccess.current on an operation that is not profile-grain (${principal.kind})`)
    })
  })
}
