/**
 * The export pipeline (issue 20 part 3, decision 0075). A sweep queues every attribution-eligible
 * conversion a live rule reaches, once per destination (`conversion_exports`); workers lease due
 * exports (SKIP LOCKED), decide each one (suppressed, skipped, held, delivered, retrying, failed),
 * and write the decision with its one ledger row, fenced by the lease. A send carries the export's
 * stable event id, so a send repeated after a crash is one event at the platform (its dedup).
 */
import { Cause, Context, Duration, Effect, Exit, Layer, Option } from "effect"
import { type DatabaseUnavailable, InvalidParameter } from "../../../schema/errors.ts"
import type { ExportHold } from "../../../schema/dpa.ts"
import type { DeliveriesQuery } from "../../../schema/exports.ts"
import { isUuid } from "../../../schema/common.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { DpaService } from "../../accounts/dpa/service.ts"
import { keysetCursor, toPage } from "../../platform/pagination.ts"
import { defaultLease, heartbeat, leaseSecondsOf } from "../../platform/lease.ts"
import { AdPlatform, type ConversionEvent } from "../../connections/providers/adplatform/port.ts"
import type { ProviderError } from "../../connections/providers/errors.ts"
import { type ClaimedExport, type DeliveryRow, type ExportFacts, ExportsRepo, type LedgerEntry, type SweepMark } from "./repo.ts"
import { decideLane, inferActionSource } from "./routing.ts"
import { scrub } from "./scrub.ts"

export interface ExportWorkerSettingsShape {
  readonly enabled: boolean
  readonly pollInterval: Duration.Duration
  /** How long a claimed batch stays ours without a renewal (renewed every third of it while it is worked). */
  readonly lease: Duration.Duration
  readonly batchSize: number
  /** At most this many events in one call to a dataset (the platform takes up to 1,000). */
  readonly sendChunk: number
  readonly maxAttempts: number
  /** The first retry's pause, doubled per attempt (jittered), at most 10 minutes. */
  readonly retryBase: Duration.Duration
  /** How often a held export is checked again (DPA or BAA accepted since). */
  readonly holdRecheck: Duration.Duration
  /** Every poll's sweep reads conversions this recent (a cheap range of the index). */
  readonly recentWindow: Duration.Duration
  /**
   * Every `cursorEvery`-th poll (and the first) also runs the complete sweep, a durable cursor per
   * rule (decision 0094): what an outage or a stopped worker left behind, however old.
   */
  readonly cursorEvery: number
  /** The cursor stays this far behind now: room for a transaction that has not committed yet. */
  readonly cursorLag: Duration.Duration
  /** A decision that dies (an undecodable row) this many times is marked failed. */
  readonly maxDefects: number
}

export const defaultExportWorkerSettings: ExportWorkerSettingsShape = {
  enabled: true,
  pollInterval: Duration.seconds(1),
  lease: defaultLease,
  batchSize: 500,
  sendChunk: 250,
  maxAttempts: 8,
  retryBase: Duration.seconds(5),
  holdRecheck: Duration.seconds(30),
  recentWindow: Duration.minutes(10),
  cursorEvery: 10,
  cursorLag: Duration.minutes(1),
  maxDefects: 3
}

const chunked = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += Math.max(1, size)) out.push(items.slice(i, i + Math.max(1, size)))
  return out
}

export const ExportWorkerSettings = Context.Reference<ExportWorkerSettingsShape>("svc/ExportWorkerSettings", {
  defaultValue: () => defaultExportWorkerSettings
})

/** A send's outcome as the ledger records it. */
interface SendVerdict {
  readonly retry: boolean
  readonly code: string
  readonly status: number | null
  readonly atLeastSeconds: number
}

const verdictOf = (error: ProviderError | DatabaseUnavailable): SendVerdict => {
  switch (error._tag) {
    case "ProviderThrottled":
      return { retry: true, code: "provider_throttled", status: 429, atLeastSeconds: error.retryAfterSeconds ?? 0 }
    case "ProviderUnavailable":
      return { retry: true, code: "provider_unavailable", status: null, atLeastSeconds: 0 }
    case "DatabaseUnavailable":
      return { retry: true, code: "database_error", status: null, atLeastSeconds: 0 }
    case "ProviderAuthRevoked":
      return { retry: false, code: "reconnect_required", status: 401, atLeastSeconds: 0 }
    case "ProviderPermissionMissing":
      return { retry: false, code: "permission_missing", status: 403, atLeastSeconds: 0 }
    case "ProviderRefused":
      return { retry: false, code: "provider_refused", status: error.status, atLeastSeconds: 0 }
  }
}

const entry = (decision: LedgerEntry["decision"], fields: Partial<LedgerEntry> = {}): LedgerEntry => ({
  decision,
  actionSource: null,
  skipReason: null,
  routing: null,
  eventName: null,
  providerStatus: null,
  errorCode: null,
  ...fields
})

/** The decision for an export before anything is sent: suppression and Platform-Safe routing first. */
type Plan =
  | { readonly _tag: "Final"; readonly entry: LedgerEntry }
  | { readonly _tag: "Send"; readonly event: ConversionEvent; readonly actionSource: string; readonly skipReason: string | null }

export const planExport = (facts: ExportFacts, eventId: string): Plan => {
  const final = (e: LedgerEntry): Plan => ({ _tag: "Final", entry: e })
  if (facts.retracted) return final(entry("skipped", { skipReason: "event_retracted" }))
  // While the attribution add-on is off nothing is exported (it was on when the export was queued).
  if (!facts.attribution_enabled) return final(entry("skipped", { skipReason: "attribution_disabled" }))
  if (!facts.destination_live) return final(entry("skipped", { skipReason: "destination_disabled" }))
  if (facts.privacy_mode === "platform_safe") {
    if (facts.platform_safe_target === "clean" && !facts.clean_dataset) {
      // Clean target: only the Clean Dataset receives; with none active, nothing is sent anywhere.
      return final(entry("suppressed", {
        routing: "suppressed_platform_safe",
        skipReason: facts.clean_destination ? null : "platform_safe_clean_dataset_inactive"
      }))
    }
    if (facts.platform_safe_target === "existing" && facts.clean_dataset) {
      return final(entry("skipped", { skipReason: "platform_safe_clean_dataset_inactive" }))
    }
  }
  const clickIds = facts.click_ids
  const actionSource = inferActionSource(facts.action_source, clickIds)
  const messagingName = facts.overrides["adplatform_capi_messaging"]
  const lane = decideLane(facts.kind, {
    actionSource,
    hasCtwaClid: clickIds["ctwa_clid"] !== undefined,
    messagingDestination: facts.messaging_destination,
    messagingLaneOn: typeof messagingName === "string",
    websiteDestination: facts.website_destination
  })
  if (!lane.send) return final(entry("skipped", { skipReason: lane.skipReason }))
  const eventName = facts.kind === "adplatform_capi_messaging"
    ? (messagingName ?? facts.event_name)
    : (facts.overrides["adplatform_capi"] ?? facts.event_name)
  const customData: Record<string, unknown> = {
    value: facts.value_amount === null ? null : Number(facts.value_amount),
    currency: facts.currency
  }
  const event = scrub(facts.privacy_mode, facts.privacy_config, {
    eventId,
    eventName,
    eventTime: Math.floor(facts.occurred_epoch),
    actionSource: lane.actionSource,
    // Server-side events carry no page URL today; a website event with one would be cut per mode.
    eventSourceUrl: null,
    email: facts.email,
    phone: facts.phone,
    externalId: facts.external_id,
    clickIds,
    customData
  })
  return { _tag: "Send", event, actionSource: lane.actionSource, skipReason: lane.skipReason }
}

export class ExportPipeline extends Context.Service<ExportPipeline, {
  /** One sweep and one batch of decisions; answers how many exports were decided (tests, bench). */
  readonly runOnce: Effect.Effect<number, DatabaseUnavailable>
  /** The complete sweep alone (the cursor, no lag); answers how many exports it queued (tests). */
  readonly sweep: Effect.Effect<number, DatabaseUnavailable>
  /** Sends one event to a destination's dataset through the same path as the pipeline. */
  readonly send: (
    connectionId: string,
    datasetId: string,
    event: ConversionEvent
  ) => Effect.Effect<{ readonly events_received: number }, ProviderError | DatabaseUnavailable>
  readonly deliveries: (
    profile: ProfileContext,
    query: DeliveriesQuery
  ) => Effect.Effect<{ readonly data: ReadonlyArray<ReturnType<typeof renderDelivery>>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } }, InvalidParameter | DatabaseUnavailable>
}>()("svc/ExportPipeline") {
  static readonly layer = Layer.effect(ExportPipeline)(
    Effect.gen(function*() {
      const repo = yield* ExportsRepo
      const platform = yield* AdPlatform
      const sessions = yield* ConnectionSessions
      const dpa = yield* DpaService
      const settings = yield* ExportWorkerSettings
      const leaseSeconds = leaseSecondsOf(settings.lease)

      const backoffSeconds = (attempts: number) => {
        const base = Duration.toSeconds(settings.retryBase) * 2 ** Math.max(0, attempts - 1)
        return Math.min(600, base * (0.5 + Math.random() / 2))
      }

      const send = (connectionId: string, datasetId: string, events: ReadonlyArray<ConversionEvent>) =>
        Effect.flatMap(sessions.session(connectionId), (session) => platform.sendEvents(session, datasetId, events))

      /** A profile's export hold, read once per batch. */
      type HoldRead = Effect.Effect<Option.Option<ExportHold>, DatabaseUnavailable>

      /** An export ready to send: its decision waits for the platform's answer. */
      interface Ready {
        readonly job: ClaimedExport
        readonly facts: ExportFacts
        readonly plan: Extract<Plan, { readonly _tag: "Send" }>
      }

      /** Everything before the send; answers the export if it is to be sent, else decides it. */
      const prepare = Effect.fn("ExportPipeline.prepare")(function*(
        job: ClaimedExport,
        read: Option.Option<Effect.Effect<ExportFacts>>,
        holdOf: (profileId: string) => HoldRead
      ) {
        // A row that does not decode dies here: this export's defect alone (onDefect), not the batch's.
        const found = Option.isNone(read) ? Option.none<ExportFacts>() : Option.some(yield* read.value)
        if (Option.isNone(found)) {
          yield* repo.decide(job, entry("skipped", { skipReason: "event_retracted" }), null, false)
          return Option.none<Ready>()
        }
        const facts = found.value
        const plan = planExport(facts, job.event_id)
        if (plan._tag === "Final") {
          yield* repo.decide(job, plan.entry, null, false)
          return Option.none<Ready>()
        }
        // Held until the profile's DPA (Platform-Safe) or BAA (HIPAA) is accepted; checked again later.
        const hold = yield* holdOf(job.profile_id)
        if (Option.isSome(hold)) {
          yield* repo.decide(
            job,
            entry("held", { skipReason: hold.value, actionSource: plan.actionSource, eventName: plan.event.event_name }),
            Duration.toSeconds(settings.holdRecheck),
            false
          )
          return Option.none<Ready>()
        }
        return Option.some<Ready>({ job, facts, plan })
      })

      /** Each export's decision once the platform answered the call that carried it. */
      const settle = (ready: Ready, sent: Exit.Exit<unknown, ProviderError | DatabaseUnavailable>) =>
        Effect.gen(function*() {
          const { job, plan } = ready
          const base = { actionSource: plan.actionSource, eventName: plan.event.event_name, skipReason: plan.skipReason }
          if (sent._tag === "Success") return yield* repo.decide(job, entry("delivered", { ...base, providerStatus: 200 }), null, true)
          const failure = Cause.findErrorOption(sent.cause)
          if (Option.isNone(failure)) return yield* Effect.failCause(Cause.die(Cause.squash(sent.cause)))
          const verdict = verdictOf(failure.value)
          const last = !verdict.retry || job.attempts + 1 >= settings.maxAttempts
          return yield* repo.decide(
            job,
            entry(last ? "failed" : "retrying", { ...base, providerStatus: verdict.status, errorCode: verdict.code }),
            last ? null : Math.max(verdict.atLeastSeconds, backoffSeconds(job.attempts + 1)),
            true
          )
        })

      const revokedOf = (sent: Exit.Exit<unknown, ProviderError | DatabaseUnavailable>) =>
        sent._tag === "Failure" && Option.exists(Cause.findErrorOption(sent.cause), (e) => e._tag === "ProviderAuthRevoked")

      const refusedOf = (sent: Exit.Exit<unknown, ProviderError | DatabaseUnavailable>) =>
        sent._tag === "Failure" && Option.exists(Cause.findErrorOption(sent.cause), (e) => e._tag === "ProviderRefused")

      /**
       * One call per dataset for up to `sendChunk` events (the connection's request budget, not the
       * event count, is what limits a per-event send); each export then gets its own decision. A
       * refused call of several events is retried one event per call, so one bad event does not
       * fail the others.
       */
      const sendGroup = (group: ReadonlyArray<Ready>): Effect.Effect<void, DatabaseUnavailable> =>
        Effect.gen(function*() {
          const first = group[0]
          if (first === undefined) return
          const { connection_id, dataset_id } = first.facts
          const sent = yield* Effect.exit(send(connection_id, dataset_id, group.map((ready) => ready.plan.event)))
          if (revokedOf(sent)) yield* sessions.reportAuthRevoked(connection_id)
          if (group.length > 1 && refusedOf(sent)) {
            return yield* Effect.forEach(group, (ready) => sendGroup([ready]), { concurrency: 4, discard: true })
          }
          if (sent._tag === "Success") {
            // One transaction for the call's exports: the per-export round trips are what limit the rate.
            yield* repo.deliverMany(group.map(({ job, plan }) => ({
              claimed: job,
              entry: entry("delivered", { actionSource: plan.actionSource, eventName: plan.event.event_name, skipReason: plan.skipReason, providerStatus: 200 })
            })))
            return
          }
          yield* Effect.forEach(
            group,
            (ready) => settle(ready, sent).pipe(Effect.catchCause((cause) => onDefect(ready.job, cause))),
            { concurrency: 8, discard: true }
          )
        })

      /**
       * A decision that died (not the database being away): counted, and after `maxDefects` the
       * export is failed with one ledger row, so an undecodable row is not retried forever.
       */
      const onDefect = (job: ClaimedExport, cause: Cause.Cause<DatabaseUnavailable>) =>
        Effect.gen(function*() {
          yield* Effect.logWarning("export decision failed", { export_id: job.id, cause })
          if (Cause.hasInterruptsOnly(cause) || Option.isSome(Cause.findErrorOption(cause))) return
          if (job.attempts + 1 >= settings.maxDefects) {
            yield* repo.decide(job, entry("failed", { errorCode: "export_undecodable" }), null, true)
          } else {
            yield* repo.release(job, backoffSeconds(job.attempts + 1))
          }
        }).pipe(Effect.catchCause((again) => Effect.logWarning("export defect not recorded; lease will expire", { export_id: job.id, cause: again })))

      let polls = 0
      let cursorBehind = false
      let marks: ReadonlyArray<SweepMark> = []
      const cursorLagSeconds = Duration.toSeconds(settings.cursorLag)
      const runOnce = Effect.gen(function*() {
        // Every poll queues what arrived lately at once (low lag); the first poll after a start,
        // every `cursorEvery`-th, and the next after a full cursor batch run the complete sweep.
        const cursorPoll = cursorBehind || polls++ % Math.max(1, settings.cursorEvery) === 0
        // Only what arrived since this process's last poll (its marks); a conversion that commits
        // behind a mark is queued by the complete sweep.
        marks = (yield* repo.enqueue(marks, Duration.toSeconds(settings.recentWindow), 1000)).marks
        if (cursorPoll) cursorBehind = (yield* repo.enqueueFromCursor(cursorLagSeconds, 1000)).full
        const jobs = yield* repo.claim(settings.batchSize, leaseSeconds)
        if (jobs.length === 0) return 0
        // The batch's lease is short and renewed while it is worked (decision 0119): a process that
        // dies lets another take its exports over within seconds. Decisions are fenced by the token,
        // so a renewal that finds an export gone to another runner needs no more than that.
        yield* Effect.forkScoped(heartbeat(settings.lease, repo.renew(jobs, leaseSeconds)))
        // A profile's hold is read once per batch, not once per export (its exports share it); a read
        // that fails is kept as its exports' failure alone.
        const profiles = [...new Set(jobs.map((job) => job.profile_id))]
        const reads = yield* Effect.forEach(
          profiles,
          (profileId) => Effect.exit(dpa.exportHold(profileId).pipe(Effect.catchTag("NotFound", () => Effect.succeedNone))),
          { concurrency: 4 }
        )
        const holds = new Map(profiles.map((profileId, i) => [profileId, reads[i]] as const))
        const holdOf = (profileId: string): HoldRead => holds.get(profileId) ?? Effect.succeedNone
        // The batch's facts in one statement (one per export was most of the worker's database time).
        const facts = yield* repo.facts(jobs)
        // One export's failure never stops the batch.
        const prepared = yield* Effect.forEach(
          jobs,
          (job) => prepare(job, Option.fromNullishOr(facts.get(job.id)), holdOf).pipe(Effect.catchCause((cause) => Effect.as(onDefect(job, cause), Option.none<Ready>()))),
          { concurrency: 8 }
        )
        const groups = new Map<string, Array<Ready>>()
        for (const ready of prepared) {
          if (Option.isNone(ready)) continue
          const key = `${ready.value.facts.connection_id}|${ready.value.facts.dataset_id}`
          const group = groups.get(key) ?? []
          if (group.length === 0) groups.set(key, group)
          group.push(ready.value)
        }
        const chunks = [...groups.values()].flatMap((group) => chunked(group, settings.sendChunk))
        yield* Effect.forEach(chunks, sendGroup, { concurrency: 4, discard: true })
        return jobs.length
      }).pipe(Effect.scoped, Effect.withSpan("ExportPipeline.runOnce"))

      const deliveries = Effect.fn("ExportPipeline.deliveries")(function*(profile: ProfileContext, query: DeliveriesQuery) {
        if (query.destination_id !== undefined && !isUuid(query.destination_id)) {
          return yield* new InvalidParameter({ message: "destination_id: expected a UUID" })
        }
        const limit = query.limit ?? 50
        const rows = yield* repo.deliveries({
          profileId: profile.profileId,
          destinationId: query.destination_id?.toLowerCase() ?? null,
          skipReason: query.skip_reason ?? null,
          limit,
          after: yield* keysetCursor(query.cursor)
        })
        return toPage(rows, limit, renderDelivery)
      })

      // Tests and the bench drive it with no lag: they know nothing is in flight.
      const sweep = Effect.gen(function*() {
        let queued = 0
        while (true) {
          const pass = yield* repo.enqueueFromCursor(0, 1000)
          queued += pass.queued
          if (!pass.full) return queued
        }
      })

      return { runOnce, sweep, send: (connectionId: string, datasetId: string, event: ConversionEvent) => send(connectionId, datasetId, [event]), deliveries }
    })
  ).pipe(Layer.provide([ExportsRepo.layer, DpaService.layer, ConnectionSessions.layer]))
}

/**
 * Works the export queue in the background, one fiber per process (started by CoreServicesLayer,
 * like the sync worker); several runners share the queue through leases.
 */
export const ExportWorkerLayer = Layer.effectDiscard(Effect.gen(function*() {
  const settings = yield* ExportWorkerSettings
  if (!settings.enabled) return
  const pipeline = yield* ExportPipeline
  const loop = Effect.gen(function*() {
    // The first poll waits one interval: start-up work goes first.
    yield* Effect.sleep(settings.pollInterval)
    while (true) {
      const busy = yield* pipeline.runOnce.pipe(
        Effect.withTracerEnabled(false),
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause)
            ? Effect.failCause(cause)
            : Effect.as(Effect.logWarning("export worker: a poll failed; retrying after the poll interval", cause), 0)
        )
      )
      yield* busy > 0 ? Effect.yieldNow : Effect.sleep(settings.pollInterval)
    }
  })
  yield* Effect.forkScoped(loop)
}))

export const renderDelivery = (row: DeliveryRow) => ({
  id: row.id,
  destination_id: row.destination_id,
  outcome_event_id: row.outcome_event_id,
  event_id: row.event_id,
  attempt: row.attempt,
  decision: row.decision,
  action_source: row.action_source,
  skip_reason: row.skip_reason,
  routing: row.routing,
  event_name: row.event_name,
  provider_status: row.provider_status,
  error_code: row.error_code,
  test: row.is_test,
  created_at: row.created_at
})
