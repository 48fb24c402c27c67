/**
 * Export rules (issue 20 part 2, decision 0074): one per conversion key of the profile; which
 * destinations it reaches (null: all) and the platform's event names per lane. The overrides
 * know two keys: `adplatform_capi` (the website event name) and `adplatform_capi_messaging` (one
 * of the platform's messaging names, or null to keep the rule off that lane); anything else 422.
 */
import { Context, Effect, Layer, Option } from "effect"
import { type DatabaseUnavailable, type InvalidParameter, InvalidState, NotFound, unprocessable, ValidationError } from "../../../schema/errors.ts"
import { isUuid } from "../../../schema/common.ts"
import { type CreateRule, MESSAGING_EVENT_NAMES, type Rule, type RulesQuery, type UpdateRule } from "../../../schema/exports.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { keysetCursor, toPage } from "../../platform/pagination.ts"
import { DestinationsRepo } from "../destinations/repo.ts"
import { type RuleRow, RulesRepo } from "./repo.ts"

const render = (row: RuleRow): Rule => row

const OVERRIDE_KEYS: ReadonlyArray<string> = ["adplatform_capi", "adplatform_capi_messaging"]
const MESSAGING: ReadonlyArray<string> = MESSAGING_EVENT_NAMES

/** The overrides as stored, or the 422 that names the first bad entry. */
export const checkOverrides = (overrides: Readonly<Record<string, string | null>>): ValidationError | undefined => {
  for (const [key, value] of Object.entries(overrides)) {
    if (!OVERRIDE_KEYS.includes(key)) {
      return unprocessable(`body.platform_event_name_overrides.${key}: unknown destination kind (expected ${OVERRIDE_KEYS.join(" or ")})`)
    }
    if (key === "adplatform_capi_messaging" && value !== null && !MESSAGING.includes(value)) {
      return unprocessable(
        `body.platform_event_name_overrides.adplatform_capi_messaging: expected one of the ad platform's messaging names (${MESSAGING.join(", ")}) or null`
      )
    }
    if (key === "adplatform_capi" && value !== null && (value.trim() === "" || value.length > 100)) {
      return unprocessable("body.platform_event_name_overrides.adplatform_capi: expected an event name of 1 to 100 characters, or null")
    }
  }
  return undefined
}

const noSuchRule = () => new NotFound({ message: "No such export rule." })

type Fails<A, E> = Effect.Effect<A, E | DatabaseUnavailable>

export class ExportRules extends Context.Service<ExportRules, {
  readonly list: (profile: ProfileContext, query: RulesQuery) => Fails<{ readonly data: ReadonlyArray<Rule>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } }, InvalidParameter>
  readonly create: (profile: ProfileContext, body: CreateRule) => Fails<Rule, ValidationError | InvalidState>
  readonly update: (profile: ProfileContext, id: string, body: UpdateRule) => Fails<Rule, ValidationError | NotFound>
}>()("svc/ExportRules") {
  static readonly layer = Layer.effect(ExportRules)(
    Effect.gen(function*() {
      const repo = yield* RulesRepo
      const destinations = yield* DestinationsRepo

      /** Every id must be a live destination of the profile (400 otherwise). */
      const checkDestinations = Effect.fn("ExportRules.checkDestinations")(function*(profile: ProfileContext, ids: ReadonlyArray<string> | null) {
        if (ids === null) return null
        const lower = [...new Set(ids.map((id) => id.toLowerCase()))]
        for (const id of lower) {
          if (Option.isNone(yield* destinations.find(profile.profileId, id))) {
            return yield* new ValidationError({ message: `body.destination_ids: ${id} is not a destination of this profile` })
          }
        }
        return lower
      })

      const list = Effect.fn("ExportRules.list")(function*(profile: ProfileContext, query: RulesQuery) {
        const limit = query.limit ?? 50
        return toPage(yield* repo.list(profile.profileId, limit, yield* keysetCursor(query.cursor)), limit, render)
      })

      const create = Effect.fn("ExportRules.create")(function*(profile: ProfileContext, body: CreateRule) {
        const overrides = body.platform_event_name_overrides ?? {}
        const bad = checkOverrides(overrides)
        if (bad !== undefined) return yield* bad
        const destinationIds = yield* checkDestinations(profile, body.destination_ids ?? null)
        const id = crypto.randomUUID()
        const inserted = yield* repo.insert(id, profile.profileId, body.conversion_key, { destinationIds, overrides, enabled: body.enabled ?? true })
        if (!inserted) {
          return yield* new InvalidState({ message: `A rule for conversion_key ${body.conversion_key} exists; edit it instead.`, reason: "rule_exists" })
        }
        return render(Option.getOrThrow(yield* repo.find(profile.profileId, id)))
      })

      const update = Effect.fn("ExportRules.update")(function*(profile: ProfileContext, rawId: string, body: UpdateRule) {
        if (!isUuid(rawId)) return yield* noSuchRule()
        const found = yield* repo.find(profile.profileId, rawId.toLowerCase())
        if (Option.isNone(found)) return yield* noSuchRule()
        const current = found.value
        const overrides = body.platform_event_name_overrides ?? current.platform_event_name_overrides
        const bad = checkOverrides(overrides)
        if (bad !== undefined) return yield* bad
        const destinationIds = body.destination_ids === undefined
          ? current.destination_ids
          : yield* checkDestinations(profile, body.destination_ids)
        yield* repo.update(profile.profileId, current.id, { destinationIds, overrides, enabled: body.enabled ?? current.enabled })
        return render(Option.getOrThrow(yield* repo.find(profile.profileId, current.id)))
      })

      return { list, create, update }
    })
  ).pipe(Layer.provide([RulesRepo.layer, DestinationsRepo.layer]))
}
