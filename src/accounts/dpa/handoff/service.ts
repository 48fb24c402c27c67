/**
 * DPA hand-off (decision 0098). An app mints a single-use, expiring URL for a profile it reaches
 * but did not provision (its app-level DPA does not cover a profile it only holds a grant on);
 * the profile's own owner or admin opens it signed in to the console, reads the DPA and accepts
 * it through the ordinary acceptance path (`DpaService.acceptProfile`), which checks the role.
 * Only the token's SHA-256 digest is stored.
 */
import { Context, Effect, Layer, Option } from "effect"
import { DEFAULT_HANDOFF_MINUTES, type DpaHandoff, type MintDpaHandoff } from "../../../../schema/dpa-handoff.ts"
import { CURRENT_DPA_VERSION, type ProfileAgreements } from "../../../../schema/dpa.ts"
import {
  type DatabaseUnavailable,
  type InsufficientScope,
  NotFound,
  type ValidationError
} from "../../../../schema/errors.ts"
import { randomBase62, secretDigest } from "../../../kernel/credentials/tokens.ts"
import type { AppPrincipal, PrincipalShape } from "../../../kernel/principal.ts"
import { AppConfig } from "../../../platform/config.ts"
import { DpaService } from "../service.ts"
import { DpaHandoffRepo } from "./repo.ts"

/** Where the link leads: the server-rendered page (src/accounts/dpa/handoff/pages.ts). */
export const HANDOFF_PAGE_PATH = "/legal/dpa/handoff"

/** A live link and the profile's agreements, as the page shows them. */
export interface HandoffView {
  readonly token: string
  readonly expiresAt: string
  readonly agreements: ProfileAgreements
}

export class DpaHandoffs extends Context.Service<DpaHandoffs, {
  readonly mint: (app: AppPrincipal, input: MintDpaHandoff) => Effect.Effect<DpaHandoff, NotFound | DatabaseUnavailable>
  /** The live link's profile as the signed-in person may see it; None when the link is not usable. */
  readonly view: (
    actor: PrincipalShape,
    token: string
  ) => Effect.Effect<Option.Option<HandoffView>, NotFound | DatabaseUnavailable>
  /** Accepts the DPA as `actor` and uses the link up; None when the link is not usable. */
  readonly accept: (
    actor: PrincipalShape,
    token: string,
    version: string
  ) => Effect.Effect<Option.Option<ProfileAgreements>, NotFound | InsufficientScope | ValidationError | DatabaseUnavailable>
}>()("svc/DpaHandoffs") {
  static readonly layer = Layer.effect(DpaHandoffs)(
    Effect.gen(function*() {
      const repo = yield* DpaHandoffRepo
      const dpa = yield* DpaService
      const config = yield* AppConfig

      const mint = Effect.fn("DpaHandoffs.mint")(function*(app: AppPrincipal, input: MintDpaHandoff) {
        const profileId = input.profile_id.toLowerCase()
        // One 404 whether the profile is missing or out of the app's reach: no probing of ids.
        if (!(yield* repo.appReaches(app.appId, profileId))) {
          return yield* new NotFound({ message: "No such profile for this app." })
        }
        const token = randomBase62(43)
        const row = yield* repo.insert(profileId, app.appId, secretDigest(token), input.expires_in_minutes ?? DEFAULT_HANDOFF_MINUTES)
        const url = new URL(HANDOFF_PAGE_PATH, config.baseUrl)
        url.searchParams.set("token", token)
        return {
          profile_id: profileId,
          url: url.href,
          expires_at: row.expires_at,
          dpa_version: CURRENT_DPA_VERSION
        } satisfies DpaHandoff
      })

      const view = Effect.fn("DpaHandoffs.view")(function*(actor: PrincipalShape, token: string) {
        const live = yield* repo.findLive(secretDigest(token))
        if (Option.isNone(live)) return Option.none()
        // The member read: a person outside the profile gets NotFound, shown as "may not accept".
        const agreements = yield* dpa.profileAgreements(actor, live.value.profile_id)
        return Option.some({ token, expiresAt: live.value.expires_at, agreements })
      })

      const accept = Effect.fn("DpaHandoffs.accept")(function*(actor: PrincipalShape, token: string, version: string) {
        const digest = secretDigest(token)
        const live = yield* repo.findLive(digest)
        if (Option.isNone(live)) return Option.none()
        // Accept first (it checks owner or admin), then use the link up: a visitor who may not
        // accept never burns it. A second accept is a no-op of the acceptance path.
        const changed = yield* dpa.acceptProfile(actor, live.value.profile_id, "dpa", { version })
        const userId = actor.kind === "session" ? actor.userId : null
        if (userId === null) return Option.none()
        const used = yield* repo.consume(digest, userId)
        if (Option.isNone(used)) return Option.none()
        const { changed: _changed, ...agreements } = changed
        return Option.some(agreements)
      })

      return { mint, view, accept }
    })
  ).pipe(Layer.provide(DpaHandoffRepo.layer), Layer.provide(DpaService.layer))
}
