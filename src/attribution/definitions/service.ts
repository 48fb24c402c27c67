/**
 * Conversion definitions: goal definitions (`/api/v1/goals/definitions`, the deprecated
 * `/api/v1/goals`) and outcome definitions (`/api/v1/profile/outcome-definitions`,
 * `/api/v1/outcome-definitions/{id}`) are one set of rows, `conversion_definitions`.
 *
 * Every write runs in one transaction under the profile's attribution lock. A classification
 * write (a definition created or removed, or its kind, event names, outcome key, window, cash
 * flag or eligibility changed) also queues one full-profile replay in that transaction, joining
 * a replay that is still queued; a write that changes only the name or the default flag queues
 * nothing. Decision 0030.
 */
import { Context, Effect, Layer, type Option } from "effect"
import {
  type ConversionDefinition,
  DEFAULT_LOOKBACK_WINDOW_DAYS,
  type LegacyGoal,
  type OutcomeDefinitions,
  type PatchGoalDefinition,
  type PutOutcomeDefinitions,
  type UpsertGoalDefinition
} from "../../../schema/attribution.ts"
import { type DatabaseUnavailable, type InvalidParameter, NotFound, unprocessable, type ValidationError } from "../../../schema/errors.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import type { PrincipalShape, ProfileContext } from "../../kernel/principal.ts"
import { DEFAULT_PAGE_SIZE, keysetCursor, toPage } from "../../platform/pagination.ts"
import { type DefinitionRow, DefinitionsRepo, type DefinitionValues } from "./repo.ts"
import {
  anyChanged,
  classificationChanged,
  conversionKeyOfName,
  distinctNames,
  invalid,
  quoted,
  renderDefinition,
  replacementProblem,
  valuesOf
} from "./rules.ts"
import { ReplayQueue } from "../jobs/repo.ts"
import { EventsRepo } from "../conversions/repo.ts"

const noSuchDefinition = () => new NotFound({ message: "No such definition." })

export interface Written {
  readonly definition: ConversionDefinition
  /** The definition did not exist: 201. */
  readonly created: boolean
  /** The replay this write queued or joined; null when it changed no classification. */
  readonly replayJobId: string | null
}

export interface Replaced {
  readonly data: OutcomeDefinitions
  readonly replayJobId: string | null
}

export interface PageOf<A> {
  readonly data: ReadonlyArray<A>
  readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
}

type Errors = ValidationError | DatabaseUnavailable

export class Definitions extends Context.Service<Definitions, {
  readonly list: (
    profile: ProfileContext,
    page: { readonly limit?: number; readonly cursor?: string }
  ) => Effect.Effect<PageOf<ConversionDefinition>, InvalidParameter | DatabaseUnavailable>
  readonly upsert: (actor: PrincipalShape, profile: ProfileContext, input: UpsertGoalDefinition) => Effect.Effect<Written, Errors>
  /** The deprecated POST /api/v1/goals, mapped onto `upsert`. */
  readonly upsertLegacy: (actor: PrincipalShape, profile: ProfileContext, input: LegacyGoal) => Effect.Effect<Written, Errors>
  readonly patch: (
    actor: PrincipalShape,
    profile: ProfileContext,
    id: string,
    patch: PatchGoalDefinition
  ) => Effect.Effect<Written, Errors | NotFound>
  readonly outcomeDefinitions: (profile: ProfileContext) => Effect.Effect<OutcomeDefinitions, DatabaseUnavailable>
  readonly replaceOutcomeDefinitions: (
    actor: PrincipalShape,
    profile: ProfileContext,
    body: PutOutcomeDefinitions
  ) => Effect.Effect<Replaced, Errors>
  readonly setEventKey: (
    actor: PrincipalShape,
    profile: ProfileContext,
    id: string,
    eventKey: string | null
  ) => Effect.Effect<Written, Errors | NotFound>
  /**
   * A built-in cash definition of `eventNames` (a card gateway's or a store's first payment,
   * src/ingestion/events/payments), in the caller's transaction under its attribution lock;
   * None when `conversionKey` is taken already.
   */
  readonly createCashEventDefinition: (
    profileId: string,
    conversionKey: string,
    name: string,
    eventNames: ReadonlyArray<string>
  ) => Effect.Effect<Option.Option<string>, DatabaseUnavailable>
}>()("svc/Definitions") {
  static readonly layer = Layer.effect(Definitions)(
    Effect.gen(function*() {
      const repo = yield* DefinitionsRepo
      const queue = yield* ReplayQueue
      const conversions = yield* EventsRepo
      const audit = yield* AuditLog

      const inTransaction = repo.transaction

      const replayIf = (changed: boolean, profileId: string) =>
        changed
          ? Effect.map(queue.enqueue(profileId, "definitions_changed"), (queued): string | null => queued.jobId)
          : Effect.succeed<string | null>(null)

      /** 400 when another definition already lists one of `names` (an event must have one meaning). */
      const ensureNamesFree = Effect.fn("Definitions.ensureNamesFree")(function*(
        profileId: string,
        names: ReadonlyArray<string>,
        exceptId: string | null,
        field: string
      ) {
        const owners = yield* repo.nameOwners(profileId, names, exceptId === null ? [] : [exceptId])
        const owner = owners[0]
        if (owner !== undefined) {
          return yield* invalid(
            field,
            `${quoted(owner.event_name)} is already listed by the definition ${quoted(owner.conversion_key)}; an event name belongs to one definition`
          )
        }
      })

      /**
       * The `event_key` rule (2026-09-28): on a `pipeline_stage` definition a non-null `event_key`
       * must be one of the read's `outcomes[].key`, else 422. `eventDefinitionNames` are the names
       * `event` definitions list once the write is applied.
       */
      const ensureKnownKey = Effect.fn("Definitions.ensureKnownKey")(function*(
        profileId: string,
        checks: ReadonlyArray<{ readonly key: string; readonly field: string }>,
        eventDefinitionNames: ReadonlySet<string>
      ) {
        const unresolved = checks.filter((check) => !eventDefinitionNames.has(check.key))
        if (unresolved.length === 0) return
        const seen = yield* repo.seenAmong(profileId, unresolved.map((check) => check.key))
        const unknown = unresolved.find((check) => !seen.has(check.key))
        if (unknown !== undefined) {
          return yield* unprocessable(
            `${unknown.field}: ${quoted(unknown.key)} is not one of outcomes[].key of GET /api/v1/profile/outcome-definitions`,
            { reason: "unknown_event_key" }
          )
        }
      })

      const eventNamesOfEventDefinitions = (rows: ReadonlyArray<DefinitionValues>) =>
        new Set(rows.filter((row) => row.kind === "event").flatMap((row) => row.event_names))

      /**
       * Writes `after` over `existing` (or creates it), moving the default flag first when it is
       * set, and queues the replay when the classification changed. Runs inside the transaction.
       */
      const write = Effect.fn("Definitions.write")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        existing: DefinitionRow | undefined,
        after: DefinitionValues
      ) {
        const id = existing?.id ?? crypto.randomUUID()
        if (existing !== undefined && !anyChanged(valuesOf(existing), after)) {
          return { definition: renderDefinition(existing), created: false, replayJobId: null } satisfies Written
        }
        if (after.is_default && existing?.is_default !== true) yield* repo.clearDefault(profile.profileId, id)
        const row = existing === undefined
          ? yield* repo.insert(profile.profileId, id, after)
          : yield* repo.update(profile.profileId, id, after)
        const classification = existing === undefined || classificationChanged(valuesOf(existing), after)
        const replayJobId = yield* replayIf(classification, profile.profileId)
        yield* audit.record({
          actor,
          action: existing === undefined ? "conversion_definition.created" : "conversion_definition.updated",
          targetKind: "conversion_definition",
          targetId: id,
          workspaceId: profile.workspaceId,
          profileId: profile.profileId,
          details: { conversion_key: after.conversion_key, classification_changed: classification, replay_job_id: replayJobId }
        })
        return { definition: renderDefinition(row), created: existing === undefined, replayJobId } satisfies Written
      })

      const list = Effect.fn("Definitions.list")(function*(
        profile: ProfileContext,
        page: { readonly limit?: number; readonly cursor?: string }
      ) {
        const limit = page.limit ?? DEFAULT_PAGE_SIZE
        // The connect-broker tier reads empty (decision 0026).
        if (!profile.attributionEnabled) return { data: [], pagination: { has_next: false, cursor: null } }
        const rows = yield* repo.page(profile.profileId, { limit, after: yield* keysetCursor(page.cursor) })
        return toPage(rows, limit, renderDefinition)
      })

      const upsert = Effect.fn("Definitions.upsert")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        input: UpsertGoalDefinition
      ) {
        return yield* inTransaction(Effect.gen(function*() {
          yield* queue.lockProfile(profile.profileId)
          const found = yield* repo.findByKey(profile.profileId, input.conversion_key, true)
          const existing = found._tag === "Some" ? found.value : undefined
          const names = distinctNames(input.event_names)
          yield* ensureNamesFree(profile.profileId, names, existing?.id ?? null, "body.event_names")
          const after: DefinitionValues = {
            conversion_key: input.conversion_key,
            name: input.name,
            kind: existing?.kind ?? "event",
            event_names: names,
            event_key: existing?.event_key ?? null,
            lookback_window_days: input.lookback_window_days ?? existing?.lookback_window_days ?? DEFAULT_LOOKBACK_WINDOW_DAYS,
            is_default: input.is_default ?? existing?.is_default ?? false,
            counts_as_cash: input.counts_as_cash ?? existing?.counts_as_cash ?? false,
            attribution_eligible: input.attribution_eligible ?? existing?.attribution_eligible ?? true
          }
          return yield* write(actor, profile, existing, after)
        }))
      })

      const upsertLegacy = Effect.fn("Definitions.upsertLegacy")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        input: LegacyGoal
      ) {
        const conversionKey = conversionKeyOfName(input.name)
        if (conversionKey === "") return yield* invalid("body.name", "must contain a letter or a digit (the conversion key is derived from it)")
        return yield* upsert(actor, profile, {
          conversion_key: conversionKey,
          name: input.name,
          event_names: [input.event_name],
          ...(input.lookback_window_days === undefined ? {} : { lookback_window_days: input.lookback_window_days }),
          ...(input.is_default === undefined ? {} : { is_default: input.is_default }),
          ...(input.counts_as_cash === undefined ? {} : { counts_as_cash: input.counts_as_cash }),
          ...(input.attribution_eligible === undefined ? {} : { attribution_eligible: input.attribution_eligible })
        })
      })

      const patch = Effect.fn("Definitions.patch")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        id: string,
        patch: PatchGoalDefinition
      ) {
        return yield* inTransaction(Effect.gen(function*() {
          yield* queue.lockProfile(profile.profileId)
          const found = yield* repo.find(profile.profileId, id, true)
          if (found._tag === "None") return yield* noSuchDefinition()
          const existing = found.value
          const names = patch.event_names === undefined ? existing.event_names : distinctNames(patch.event_names)
          if (patch.event_names !== undefined) yield* ensureNamesFree(profile.profileId, names, existing.id, "body.event_names")
          const after: DefinitionValues = {
            ...valuesOf(existing),
            event_names: names,
            ...(patch.name === undefined ? {} : { name: patch.name }),
            ...(patch.lookback_window_days === undefined ? {} : { lookback_window_days: patch.lookback_window_days }),
            ...(patch.is_default === undefined ? {} : { is_default: patch.is_default }),
            ...(patch.counts_as_cash === undefined ? {} : { counts_as_cash: patch.counts_as_cash }),
            ...(patch.attribution_eligible === undefined ? {} : { attribution_eligible: patch.attribution_eligible })
          }
          return yield* write(actor, profile, existing, after)
        }))
      })

      const outcomeDefinitions = Effect.fn("Definitions.outcomeDefinitions")(function*(profile: ProfileContext) {
        if (!profile.attributionEnabled) return { definitions: [], outcomes: [] } satisfies OutcomeDefinitions
        const rows = yield* repo.all(profile.profileId)
        const keys = yield* repo.outcomeKeys(profile.profileId)
        return { definitions: rows.map(renderDefinition), outcomes: keys } satisfies OutcomeDefinitions
      })

      const setEventKey = Effect.fn("Definitions.setEventKey")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        id: string,
        eventKey: string | null
      ) {
        return yield* inTransaction(Effect.gen(function*() {
          yield* queue.lockProfile(profile.profileId)
          const found = yield* repo.find(profile.profileId, id, true)
          if (found._tag === "None") return yield* noSuchDefinition()
          const existing = found.value
          if (existing.event_key === eventKey) {
            return { definition: renderDefinition(existing), created: false, replayJobId: null } satisfies Written
          }
          if (eventKey !== null) {
            if (existing.kind !== "pipeline_stage") {
              return yield* invalid("body.event_key", "applies only to pipeline_stage definitions; an event definition lists event_names")
            }
            const current = yield* repo.all(profile.profileId)
            yield* ensureKnownKey(profile.profileId, [{ key: eventKey, field: "body.event_key" }], eventNamesOfEventDefinitions(current))
          }
          return yield* write(actor, profile, existing, { ...valuesOf(existing), event_key: eventKey })
        }))
      })

      const replaceOutcomeDefinitions = Effect.fn("Definitions.replaceOutcomeDefinitions")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        body: PutOutcomeDefinitions
      ) {
        const broken = replacementProblem(body.definitions)
        if (broken !== undefined) return yield* broken
        const wanted: ReadonlyArray<DefinitionValues> = body.definitions.map((entry) => ({
          conversion_key: entry.conversion_key,
          name: entry.name,
          kind: entry.kind ?? "event",
          event_names: distinctNames(entry.event_names),
          event_key: entry.event_key ?? null,
          lookback_window_days: entry.lookback_window_days ?? DEFAULT_LOOKBACK_WINDOW_DAYS,
          is_default: entry.is_default ?? false,
          counts_as_cash: entry.counts_as_cash ?? false,
          attribution_eligible: entry.attribution_eligible ?? true
        }))
        return yield* inTransaction(Effect.gen(function*() {
          yield* queue.lockProfile(profile.profileId)
          yield* ensureKnownKey(
            profile.profileId,
            wanted.flatMap((entry, index) =>
              entry.kind === "pipeline_stage" && entry.event_key !== null
                ? [{ key: entry.event_key, field: `body.definitions.${index}.event_key` }]
                : []
            ),
            eventNamesOfEventDefinitions(wanted)
          )
          const current = yield* repo.all(profile.profileId)
          const byKey = new Map(current.map((row) => [row.conversion_key, row]))
          const wantedKeys = new Set(wanted.map((entry) => entry.conversion_key))
          const removed = current.filter((row) => !wantedKeys.has(row.conversion_key))
          const removedIds = removed.map((row) => row.id)
          if (removedIds.length > 0) {
            // Their conversions stay (with their keys) but lose the definition, so they no longer
            // count as cash nor take credit (the queued replay removes their credit rows).
            yield* conversions.detachDefinitions(profile.profileId, removedIds)
            yield* repo.remove(profile.profileId, removedIds)
          }
          const keptDefault = wanted.find((entry) => entry.is_default)
          yield* repo.clearDefault(profile.profileId, keptDefault === undefined ? null : byKey.get(keptDefault.conversion_key)?.id ?? null)
          let classification = removed.length > 0
          let created = 0
          let updated = 0
          for (const entry of wanted) {
            const existing = byKey.get(entry.conversion_key)
            if (existing === undefined) {
              yield* repo.insert(profile.profileId, crypto.randomUUID(), entry)
              classification = true
              created++
            } else if (anyChanged(valuesOf(existing), entry)) {
              // clearDefault above already took the flag off every row but the kept default's.
              if (anyChanged({ ...valuesOf(existing), is_default: existing.is_default && entry.is_default }, entry)) {
                yield* repo.update(profile.profileId, existing.id, entry)
              }
              classification = classification || classificationChanged(valuesOf(existing), entry)
              updated++
            }
          }
          const replayJobId = yield* replayIf(classification, profile.profileId)
          if (created + updated + removed.length > 0) {
            yield* audit.record({
              actor,
              action: "conversion_definitions.replaced",
              targetKind: "profile",
              targetId: profile.profileId,
              workspaceId: profile.workspaceId,
              profileId: profile.profileId,
              details: { created, updated, removed: removed.map((row) => row.conversion_key), replay_job_id: replayJobId }
            })
          }
          const rows = yield* repo.all(profile.profileId)
          const keys = yield* repo.outcomeKeys(profile.profileId)
          return { data: { definitions: rows.map(renderDefinition), outcomes: keys }, replayJobId } satisfies Replaced
        }))
      })

      const createCashEventDefinition = Effect.fn("Definitions.createCashEventDefinition")(function*(
        profileId: string,
        conversionKey: string,
        name: string,
        eventNames: ReadonlyArray<string>
      ) {
        return yield* repo.createCashEventDefinition(profileId, conversionKey, name, eventNames)
      })

      return { list, upsert, upsertLegacy, patch, outcomeDefinitions, replaceOutcomeDefinitions, setEventKey, createCashEventDefinition }
    })
  ).pipe(Layer.provide([DefinitionsRepo.layer, ReplayQueue.layer, EventsRepo.layer, AuditLog.layer]))
}
