/**
 * The operator's quickstart (decision 0053): a person who owns a workspace, a profile on the
 * attribution tier, its tracking key allowing this service's origin, a default `purchase`
 * conversion definition and an API key that can send and read. Run again, it finds and reuses
 * everything but the API key: only a key's digest is stored, so a new key is minted each run
 * (earlier ones stay valid until revoked). The domains' own services do the writes, acting as
 * the person through a short internal session that is revoked before the answer.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { QuickstartBundle } from "../../../schema/people.ts"
import { DEFAULT_KEY_SCOPES } from "../../../schema/scopes.ts"
import { TrackingOrigin } from "../../../schema/tracking.ts"
import { Definitions } from "../../attribution/definitions/service.ts"
import { ApiKeysService } from "../../accounts/api-keys/service.ts"
import { Sessions } from "../../accounts/sessions/service.ts"
import { CredentialStore, type PrincipalShape } from "../../kernel/principal.ts"
import { People } from "../../accounts/people/service.ts"
import { AppConfig } from "../../platform/config.ts"
import { Provisioning } from "../../accounts/profiles/service.ts"
import { Workspaces } from "../../accounts/workspaces/service.ts"
import { TrackingService } from "../../ingestion/tracking/tracker/service.ts"

export const QUICKSTART_EMAIL = "you@example.com"
export const QUICKSTART_WORKSPACE = "Quickstart"
export const QUICKSTART_PROFILE = "Quickstart site"
// The connections pair lets the sandbox demo (README) connect a provider with the same key.
export const QUICKSTART_SCOPES = [...DEFAULT_KEY_SCOPES, "events:write", "goals:write", "tracking:write", "connections:read", "connections:write"] as const

const isTrackingOrigin = Schema.is(TrackingOrigin)

/** The origins the quickstart's tracker accepts: the service's own (a page it serves, or curl with its Origin). */
export const localOrigins = (baseUrl: string, port: number): ReadonlyArray<string> =>
  [...new Set([new URL(baseUrl).origin, `http://localhost:${port}`])].filter(isTrackingOrigin)

/** Anything a domain refuses here is a bug in the quickstart, not the operator's input. */
const orDie = <A, E, R>(effect: Effect.Effect<A, E | DatabaseUnavailable, R>): Effect.Effect<A, DatabaseUnavailable, R> =>
  Effect.catch(effect, (error) => error instanceof DatabaseUnavailable ? Effect.fail(error) : Effect.die(error))

export class Quickstart extends Context.Service<Quickstart, {
  readonly run: (actor: PrincipalShape, email: string | undefined) => Effect.Effect<QuickstartBundle, DatabaseUnavailable>
}>()("svc/Quickstart") {
  static readonly layer = Layer.effect(Quickstart)(
    Effect.gen(function*() {
      const settings = yield* AppConfig
      const people = yield* People
      const sessions = yield* Sessions
      const workspaces = yield* Workspaces
      const provisioning = yield* Provisioning
      const credentials = yield* CredentialStore
      const tracking = yield* TrackingService
      const definitions = yield* Definitions
      const apiKeys = yield* ApiKeysService
      const asPerson = Effect.fn("Quickstart.asPerson")(function*(
        person: Extract<PrincipalShape, { readonly kind: "session" }>,
        email: string
      ) {
        const foundWorkspace = yield* workspaces.findOwnedByName(person.userId, QUICKSTART_WORKSPACE)
        const workspaceId = Option.isSome(foundWorkspace)
          ? foundWorkspace.value
          : (yield* orDie(workspaces.create(person, { name: QUICKSTART_WORKSPACE }))).workspace_id
        const foundProfile = yield* provisioning.findLiveByName(workspaceId, QUICKSTART_PROFILE)
        const profileId = Option.isSome(foundProfile)
          ? foundProfile.value
          : (yield* orDie(provisioning.createForPerson(person, {
            workspaceId,
            name: QUICKSTART_PROFILE,
            currency: "USD",
            timeZone: "UTC"
          }))).profile_id
        const membership = yield* credentials.membership(person.userId, profileId)
        if (Option.isNone(membership)) return yield* Effect.die("the quickstart person cannot reach their own profile")
        const profile = membership.value.profile

        const { key } = yield* tracking.createKey(person, profile)
        const current = yield* tracking.settings(profile)
        const wanted = localOrigins(settings.baseUrl, settings.port)
        const missing = wanted.filter((origin) => !current.allowed_origins.includes(origin))
        if (missing.length > 0) {
          yield* tracking.updateSettings(person, profile, { allowed_origins: [...current.allowed_origins, ...missing] })
        }

        // No cursor is sent, so the list's refusal of a foreign cursor cannot happen here.
        const existing = yield* definitions.list(profile, { limit: 100 }).pipe(Effect.catchTag("InvalidParameter", Effect.die))
        const hasPurchase = existing.data.some((definition) => definition.conversion_key === "purchase")
        if (!hasPurchase) {
          yield* orDie(definitions.upsert(person, profile, {
            conversion_key: "purchase",
            name: "Purchase",
            event_names: ["purchase"],
            is_default: true,
            counts_as_cash: true
          }))
        }

        const minted = yield* orDie(apiKeys.create(person, workspaceId, {
          profile_id: profileId,
          name: "quickstart",
          scopes: QUICKSTART_SCOPES
        }))
        return {
          workspaceId,
          profileId,
          trackingKey: key.key,
          allowedOrigins: [...current.allowed_origins, ...missing],
          apiKey: minted,
          created: { workspace: Option.isNone(foundWorkspace), profile: Option.isNone(foundProfile), definition: !hasPurchase },
          email
        }
      })

      const run = Effect.fn("Quickstart.run")(function*(actor: PrincipalShape, rawEmail: string | undefined) {
        const person = yield* people.ensure(rawEmail ?? QUICKSTART_EMAIL)
        const made = yield* Effect.acquireUseRelease(
          sessions.openFor(actor, person.id),
          (session) => asPerson(session, person.email),
          (session) => Effect.ignore(sessions.close(actor, session.sessionId))
        )
        // A person without a password is invited; one with a password gets a reset link.
        const link = yield* orDie(people.issueLink(actor, person.email, person.has_password ? "reset" : "invite"))
        return {
          person_email: person.email,
          sign_in_url: link.url,
          workspace_id: made.workspaceId,
          profile_id: made.profileId,
          api_key: made.apiKey.plaintext,
          api_key_id: made.apiKey.key.id,
          api_key_scopes: made.apiKey.key.scopes,
          tracking_key: made.trackingKey,
          allowed_origins: made.allowedOrigins,
          conversion_key: "purchase",
          base_url: settings.baseUrl,
          created: { person: person.created, ...made.created }
        } satisfies QuickstartBundle
      })

      return { run }
    })
  ).pipe(
    // Built on the domain services (decision 0053): one list for the HTTP group and the CLI.
    Layer.provide([People.layer, Sessions.layer, Workspaces.layer, Provisioning.layer, TrackingService.layer, Definitions.layer, ApiKeysService.layer])
  )
}
