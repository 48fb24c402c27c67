/**
 * Export destinations (issue 20 part 2, decision 0074): the ad platform's Conversions API lanes
 * (`adplatform_capi` website, `adplatform_capi_messaging` business messaging), each a dataset
 * reached through one of the profile's ad-platform connections. A create or edit that would
 * match another live destination (same lane, same dataset) is 409 `destination_conflict` naming
 * it, and writes nothing. The test event goes through the pipeline's send path, marked as a test.
 */
import { Cause, Context, Effect, Layer, Option } from "effect"
import {
  AdplatformUnavailable,
  type DatabaseUnavailable,
  DestinationConflict,
  type InvalidParameter,
  NotFound,
  ValidationError
} from "../../../schema/errors.ts"
import { type Backlog, BACKLOG_COUNT_CAP, BACKLOG_RATE_CAP, isUuid, NO_BACKLOG } from "../../../schema/common.ts"
import type { CreateDestination, Destination, DestinationsQuery, UpdateDestination } from "../../../schema/exports.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { keysetCursor, toPage } from "../../platform/pagination.ts"
import { ExportPipeline } from "../pipeline/service.ts"
import { ExportsRepo } from "../pipeline/repo.ts"
import { backlogOf } from "../../platform/backlog.ts"
import { sha256 } from "../pipeline/scrub.ts"
import { type DestinationRow, DestinationsRepo } from "./repo.ts"

const render = (row: DestinationRow, backlog: Backlog): Destination => ({
  id: row.id,
  kind: row.kind,
  connection_id: row.connection_id,
  dataset_id: row.dataset_id,
  name: row.name,
  clean_dataset: row.clean_dataset,
  status: row.status,
  platform_safe_target: row.platform_safe_target,
  created_at: row.created_at,
  updated_at: row.updated_at,
  backlog
})

const noSuchDestination = () => new NotFound({ message: "No such export destination." })
const conflict = (id: string) =>
  new DestinationConflict({
    message: "Another live destination already sends this lane to this dataset; nothing was written.",
    conflicting_destination_id: id
  })

type Fails<A, E> = Effect.Effect<A, E | DatabaseUnavailable>

export class ExportDestinations extends Context.Service<ExportDestinations, {
  readonly list: (profile: ProfileContext, query: DestinationsQuery) => Fails<{ readonly data: ReadonlyArray<Destination>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } }, InvalidParameter>
  readonly create: (profile: ProfileContext, body: CreateDestination) => Fails<Destination, DestinationConflict | ValidationError | NotFound>
  readonly update: (profile: ProfileContext, id: string, body: UpdateDestination) => Fails<Destination, DestinationConflict | NotFound>
  readonly remove: (profile: ProfileContext, id: string) => Fails<{ readonly id: string; readonly deleted: boolean }, NotFound>
  /** The `limit` live destinations whose oldest waiting export waited longest, with their backlogs (the metrics). */
  readonly backlogLeaders: (limit: number) => Fails<ReadonlyArray<{ readonly id: string; readonly backlog: Backlog }>, never>
  readonly testEvent: (
    profile: ProfileContext,
    id: string,
    eventName: string | undefined
  ) => Fails<{ readonly destination_id: string; readonly event_id: string; readonly event_name: string; readonly test: true; readonly platform_reply: { readonly events_received: number } }, NotFound | AdplatformUnavailable>
}>()("svc/ExportDestinations") {
  static readonly layer = Layer.effect(ExportDestinations)(
    Effect.gen(function*() {
      const repo = yield* DestinationsRepo
      const ledger = yield* ExportsRepo
      const pipeline = yield* ExportPipeline

      const findOr404 = (profile: ProfileContext, id: string) =>
        isUuid(id)
          ? Effect.flatMap(repo.find(profile.profileId, id.toLowerCase()), Option.match({
            onNone: () => Effect.fail(noSuchDestination()),
            onSome: Effect.succeed
          }))
          : Effect.fail(noSuchDestination())

      const withBacklogs = (rows: ReadonlyArray<DestinationRow>) =>
        Effect.map(
          ledger.backlogs(rows.map((row) => row.id), BACKLOG_COUNT_CAP, BACKLOG_RATE_CAP),
          (found) => new Map(found.map((row) => [row.id, row]))
        )
      const rendered = (row: DestinationRow) => Effect.map(withBacklogs([row]), (found) => render(row, backlogOf(found.get(row.id))))

      const list = Effect.fn("ExportDestinations.list")(function*(profile: ProfileContext, query: DestinationsQuery) {
        const limit = query.limit ?? 50
        const rows = yield* repo.list(profile.profileId, limit, yield* keysetCursor(query.cursor))
        const backlogs = yield* withBacklogs(rows.slice(0, limit))
        return toPage(rows, limit, (row) => render(row, backlogOf(backlogs.get(row.id))))
      })

      const create = Effect.fn("ExportDestinations.create")(function*(profile: ProfileContext, body: CreateDestination) {
        const connectionId = body.connection_id.toLowerCase()
        return yield* repo.transaction(Effect.gen(function*() {
          if (!(yield* repo.connectionOfProfile(profile.profileId, connectionId))) {
            return yield* new ValidationError({ message: "body.connection_id: not an ad-platform connection of this profile" })
          }
          const id = crypto.randomUUID()
          const inserted = yield* repo.insert({
            id,
            profileId: profile.profileId,
            kind: body.kind,
            connectionId,
            datasetId: body.dataset_id,
            name: body.name,
            cleanDataset: body.clean_dataset ?? false
          })
          if (!inserted) {
            const other = yield* repo.conflicting(profile.profileId, body.kind, body.dataset_id, null)
            return yield* conflict(Option.getOrElse(other, () => ""))
          }
          return render(Option.getOrThrow(yield* repo.find(profile.profileId, id)), NO_BACKLOG)
        }))
      })

      const update = Effect.fn("ExportDestinations.update")(function*(profile: ProfileContext, id: string, body: UpdateDestination) {
        const current = yield* findOr404(profile, id)
        const clash = () =>
          Effect.flatMap(
            repo.conflicting(profile.profileId, current.kind, body.dataset_id ?? current.dataset_id, current.id),
            (other) => Effect.fail(conflict(Option.getOrElse(other, () => "")))
          )
        if (body.dataset_id !== undefined && body.dataset_id !== current.dataset_id) {
          if (Option.isSome(yield* repo.conflicting(profile.profileId, current.kind, body.dataset_id, current.id))) return yield* clash()
        }
        // One statement, no transaction: a conflict the unique index finds leaves nothing written.
        const outcome = yield* repo.update(profile.profileId, current.id, body)
        if (outcome === "missing") return yield* noSuchDestination()
        if (outcome === "conflict") return yield* clash()
        return yield* rendered(Option.getOrThrow(yield* repo.find(profile.profileId, current.id)))
      })

      const remove = Effect.fn("ExportDestinations.remove")(function*(profile: ProfileContext, id: string) {
        const current = yield* findOr404(profile, id)
        const removed = yield* repo.remove(profile.profileId, current.id)
        return { id: current.id, deleted: removed }
      })

      const testEvent = Effect.fn("ExportDestinations.testEvent")(function*(profile: ProfileContext, id: string, eventName: string | undefined) {
        const destination = yield* findOr404(profile, id)
        const eventId = `svc_test_${crypto.randomUUID()}`
        const name = eventName ?? (destination.kind === "adplatform_capi_messaging" ? "LeadSubmitted" : "Lead")
        const actionSource = destination.kind === "adplatform_capi_messaging" ? "business_messaging" : "system_generated"
        // A test carries no person: a fixed hashed placeholder the platform shows as a test.
        const sent = yield* Effect.exit(pipeline.send(destination.connection_id, destination.dataset_id, {
          event_name: name,
          event_time: Math.floor(Date.now() / 1000),
          event_id: eventId,
          action_source: actionSource,
          user_data: { external_id: [sha256("svc-test-event")] },
          custom_data: { test_event: true }
        }))
        const base = { profileId: profile.profileId, destinationId: destination.id, eventId, actionSource, eventName: name, skipReason: null, routing: null }
        if (sent._tag === "Success") {
          yield* ledger.recordTest({ ...base, decision: "delivered", providerStatus: 200, errorCode: null })
          return { destination_id: destination.id, event_id: eventId, event_name: name, test: true as const, platform_reply: { events_received: sent.value.events_received } }
        }
        const failure = Cause.findErrorOption(sent.cause)
        const tag = Option.match(failure, { onNone: () => "internal_error", onSome: (error) => error._tag })
        yield* ledger.recordTest({ ...base, decision: "failed", providerStatus: null, errorCode: tag })
        return yield* new AdplatformUnavailable({ message: `The ad platform did not take the test event (${tag}).`, provider: "adplatform" })
      })

      const backlogLeaders = Effect.fn("ExportDestinations.backlogLeaders")(function*(limit: number) {
        const rows = yield* ledger.backlogLeaders(limit, BACKLOG_COUNT_CAP, BACKLOG_RATE_CAP)
        return rows.map((row) => ({ id: row.id, backlog: backlogOf(row) }))
      })

      return { list, create, update, remove, testEvent, backlogLeaders }
    })
  ).pipe(Layer.provide([DestinationsRepo.layer, ExportsRepo.layer, ExportPipeline.layer]))
}
