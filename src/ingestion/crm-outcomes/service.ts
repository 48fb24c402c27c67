/**
 * CRM deals become outcomes (decision 0062). A deal at a stage that maps to an outcome (the
 * mapping the stages read shows: `stageMapping`) is recorded once per (deal, stage) through the
 * events ingest, under the key `crm:<account>:<deal>:<stage>`: pushed deals (`POST /hooks/crm`)
 * and synced ones (a sync job on the CRM connection: deals changed since the last finished sync)
 * meet on that key, so a replayed callback, a sync after a push and a push after a sync write
 * nothing twice. The customer is resolved from the deal's contact (email, phone, CRM contact id).
 */
import { BigDecimal, Context, Effect, Layer, Option, Result, Schema, Stream } from "effect"
import type { ConversionDefinition } from "../../../schema/attribution.ts"
import { type DatabaseUnavailable, ServiceUnavailable } from "../../../schema/errors.ts"
import { minorExponent } from "../../kernel/money.ts"
import { Definitions } from "../../attribution/definitions/service.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import type { CheckedEvent, OutcomeOrigin } from "../events/outcomes/recorder.ts"
import { CRM_KEY_PREFIX, EventsService } from "../events/outcomes/service.ts"
import { normaliseAmount } from "../../kernel/money.ts"
import { normalizeEmail, normalizePhone } from "../../identity/normalize.ts"
import { sha256 } from "../../platform/json.ts"
import { Crm, CrmDeal, type CrmPipeline, type CrmStage } from "../../connections/providers/crm/port.ts"
import type { ProviderError } from "../../connections/providers/errors.ts"
import type { ProviderSession } from "../../connections/providers/oauth/port.ts"
import { ConnectionRecords } from "../../connections/records.ts"
import { type ConnectionRecord, ConnectionSessions } from "../../connections/sessions.ts"
import { stageEventName, stageMapping, suggestOutcome } from "../../connections/stages/service.ts"
import { type ClaimedSyncJob, SyncJobsRepo } from "../sync/repo.ts"
import { laterOf, latestOf } from "../sync/checkpoint.ts"

const PROVIDER = "crm"

/** CRM deals: the event's `source` and the outbox's `data.provider`. */
export const CRM_ORIGIN: OutcomeOrigin = { source: PROVIDER, provider: PROVIDER }


export const crmOutcomeKey = (accountId: string, dealId: string, stageId: string) =>
  `${CRM_KEY_PREFIX}${accountId}:${dealId}:${stageId}`

/** Callback types that carry a deal at its current stage (`data.object`). */
const DEAL_EVENTS = new Set(["deal.stage_changed", "deal.created"])

/** A sync reads deals changed this long before the last finished sync started (clock skew; recording is idempotent). */
const SYNC_OVERLAP_MS = 5 * 60_000
/** Deals recorded at once (the recorder commits them together). */
const RECORD_CONCURRENCY = 32
const BATCH = 200

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** `amount_minor` of `currency` as a decimal string. */
const valueOf = (amountMinor: number, currency: string): string | null => {
  const text = BigDecimal.format(BigDecimal.make(BigInt(amountMinor), minorExponent(currency.toUpperCase())))
  return Result.getOrNull(normaliseAmount(text))
}

/** What a profile maps: its definitions and the outcome keys suggestions choose among. */
interface Mappings {
  readonly definitions: ReadonlyArray<ConversionDefinition>
  readonly keys: ReadonlyArray<string>
}

/**
 * The event a deal at `stage` is recorded under, or null when the stage maps to nothing. An
 * `event` definition listing the stage's event name counts the stage itself; otherwise the
 * outcome key (a `pipeline_stage` definition's `event_key`, or the suggestion) is the event name.
 */
export const stageOutcomeEvent = (stage: CrmStage, mappings: Mappings): string | null => {
  const mapping = stageMapping(stage, mappings.definitions, suggestOutcome(stage, mappings.keys))
  if (mapping.outcome === null) return null
  const owner = mappings.definitions.find((definition) => definition.id === mapping.definition_id)
  return owner !== undefined && owner.kind === "event" ? stageEventName(stage.id) : mapping.outcome
}

const checkedDeal = (accountId: string, deal: CrmDeal, eventName: string): CheckedEvent => {
  const phone = deal.contact.phone === null ? null : Result.getOrNull(normalizePhone(deal.contact.phone))
  return {
    eventName,
    idempotencyKey: crmOutcomeKey(accountId, deal.id, deal.stage_id),
    occurredAt: deal.updated_at,
    valueAmount: valueOf(deal.amount_minor, deal.currency),
    currency: deal.currency.toUpperCase(),
    subjectRef: null,
    orderGroup: null,
    externalId: null,
    email: deal.contact.email === null || deal.contact.email.trim() === "" ? null : normalizeEmail(deal.contact.email),
    phone,
    crmContactId: deal.contact.id.trim() === "" ? null : deal.contact.id.trim(),
    nationalIdHash: null,
    anonymousId: null,
    actionSource: null,
    clickIds: {}
  }
}

const decodeDeal = Schema.decodeUnknownOption(CrmDeal)

export class CrmOutcomes extends Context.Service<CrmOutcomes, {
  /**
   * A CRM callback's deal (`deal.stage_changed`, `deal.created`) recorded on every profile holding
   * the account. Fails 503 while the CRM cannot tell the stages (the provider delivers again).
   */
  readonly fromCallback: (
    accountId: string,
    body: Readonly<Record<string, unknown>>
  ) => Effect.Effect<void, ServiceUnavailable | DatabaseUnavailable>
  /**
   * A sync job on a CRM connection: deals changed since the last finished sync (every deal on
   * the first), each at a mapped stage recorded; `onBatch` after every batch (the lease renewal).
   */
  readonly syncJob: <E>(
    job: ClaimedSyncJob,
    /** After each batch is wholly recorded: the deals seen, and the latest change of the batch (the checkpoint). */
    onBatch: (deals: number, checkpoint: string) => Effect.Effect<void, E>
  ) => Effect.Effect<number, E | ProviderError | DatabaseUnavailable>
}>()("svc/CrmOutcomes") {
  static readonly layer = Layer.effect(CrmOutcomes)(
    Effect.gen(function*() {
      const crm = yield* Crm
      const connections = yield* ConnectionRecords
      const sessions = yield* ConnectionSessions
      const jobs = yield* SyncJobsRepo
      const definitions = yield* Definitions
      const events = yield* EventsService

      const profileOf = (record: ConnectionRecord) =>
        Effect.map(jobs.attributionOn(record.profile_id), (on): ProfileContext => ({
          profileId: record.profile_id,
          workspaceId: record.workspace_id,
          attributionEnabled: on
        }))

      const mappingsOf = (profile: ProfileContext) =>
        Effect.map(definitions.outcomeDefinitions(profile), (read): Mappings => ({
          definitions: read.definitions,
          keys: read.outcomes.map((outcome) => outcome.key)
        }))

      const stagesOf = (pipelines: ReadonlyArray<CrmPipeline>) =>
        new Map(pipelines.flatMap((pipeline) => pipeline.stages.map((stage) => [`${pipeline.id}|${stage.id}`, stage] as const)))

      /** Records the deals at mapped stages on the profile; answers how many were at one. */
      const recordDeals = (
        profile: ProfileContext,
        accountId: string,
        deals: ReadonlyArray<CrmDeal>,
        stages: ReadonlyMap<string, CrmStage>,
        mappings: Mappings
      ) => {
        const wanted = deals.flatMap((deal) => {
          const stage = stages.get(`${deal.pipeline_id}|${deal.stage_id}`)
          const eventName = stage === undefined ? null : stageOutcomeEvent(stage, mappings)
          return eventName === null ? [] : [checkedDeal(accountId, deal, eventName)]
        })
        return Effect.as(
          Effect.forEach(wanted, (checked) =>
            events.record(profile, checked, sha256(checked.idempotencyKey ?? ""), CRM_ORIGIN).pipe(
              // A key recorded before (a push, a sync, a retraction since) is this deal at this stage: nothing more to write.
              Effect.catchTags({ IdempotencyKeyConflict: () => Effect.void, InvalidState: () => Effect.void })
            ), { concurrency: RECORD_CONCURRENCY, discard: true }),
          wanted.length
        )
      }

      /** The account's pipelines through the first connection that can read them; null when none can. */
      const pipelinesVia = (live: ReadonlyArray<ConnectionRecord>) =>
        Effect.gen(function*() {
          for (const record of live) {
            const pipelines = yield* sessions.session(record.id).pipe(
              Effect.flatMap((session) => Stream.runCollect(crm.pipelines(session))),
              Effect.map((found): ReadonlyArray<CrmPipeline> | null => found),
              Effect.catch((error): Effect.Effect<ReadonlyArray<CrmPipeline> | null, DatabaseUnavailable | ServiceUnavailable> => {
                switch (error._tag) {
                  case "DatabaseUnavailable":
                    return Effect.fail(error)
                  case "ProviderAuthRevoked":
                    return Effect.as(sessions.reportAuthRevoked(record.id), null)
                  case "ProviderUnavailable":
                  case "ProviderThrottled":
                    return Effect.fail(
                      new ServiceUnavailable({
                        message: "The CRM's stages could not be read now; deliver again later.",
                        reason: "provider_unavailable",
                        retry_after_seconds: 30
                      })
                    )
                  default:
                    return Effect.succeed(null)
                }
              })
            )
            if (pipelines !== null) return pipelines
          }
          return null
        })

      const fromCallback = Effect.fn("CrmOutcomes.fromCallback")(function*(
        accountId: string,
        body: Readonly<Record<string, unknown>>
      ) {
        const type = body["type"]
        const data = body["data"]
        if (typeof type !== "string" || !DEAL_EVENTS.has(type) || !isRecord(data)) return
        const deal = decodeDeal(data["object"])
        if (Option.isNone(deal)) return
        const live = yield* sessions.liveForAccount(PROVIDER, accountId)
        if (live.length === 0) return
        const pipelines = yield* pipelinesVia(live)
        if (pipelines === null) return
        const stages = stagesOf(pipelines)
        // A profile holds an account once; the same profile twice would record the same key anyway.
        for (const record of live) {
          const profile = yield* profileOf(record)
          yield* recordDeals(profile, accountId, [deal.value], stages, yield* mappingsOf(profile))
        }
      })

      const syncJob = <E>(job: ClaimedSyncJob, onBatch: (deals: number, checkpoint: string) => Effect.Effect<void, E>) =>
        Effect.gen(function*() {
          const found = yield* connections.find(job.connection_id)
          if (Option.isNone(found)) return 0
          const session: ProviderSession = yield* sessions.session(job.connection_id)
          const profile = yield* profileOf(found.value)
          const mappings = yield* mappingsOf(profile)
          const stages = stagesOf(yield* Stream.runCollect(crm.pipelines(session)))
          const last = yield* jobs.lastFinishedStart(job.connection_id)
          const fromLast = Option.getOrUndefined(Option.map(last, (at) => new Date(Date.parse(at) - SYNC_OVERLAP_MS)))
          // A job taken over after a crash resumes at its checkpoint (decision 0065): deals are read
          // oldest change first and the filter is inclusive, so the batch cut by the crash is read again.
          const updatedSince = laterOf(fromLast, job.checkpoint)
          let seen = 0
          yield* crm.deals(session, { updatedSince }).pipe(
            Stream.grouped(BATCH),
            Stream.runForEach((batch) =>
              Effect.gen(function*() {
                yield* recordDeals(profile, session.accountId, batch, stages, mappings)
                seen += batch.length
                yield* onBatch(seen, latestOf(batch.map((deal) => deal.updated_at)))
              })
            )
          )
          return seen
        }).pipe(Effect.withSpan("CrmOutcomes.syncJob", { attributes: { "svc.connection_id": job.connection_id } }))

      return { fromCallback, syncJob }
    })
  ).pipe(Layer.provide([ConnectionRecords.layer, ConnectionSessions.layer, SyncJobsRepo.layer, Definitions.layer, EventsService.layer]))
}
