/**
 * Experiments (issue 32, decision 0122): creating a draft and designing are plain database work
 * here; every read, start, stop and results read of one experiment goes through its entity
 * (cluster/Experiment.ts), so they are ordered.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { randomBytes } from "node:crypto"
import type {
  CreateExperiment,
  Design,
  DesignRequest,
  Experiment as ExperimentWire,
  ExperimentConfig,
  ExperimentResults,
  ExperimentsQuery,
  StopReason
} from "../../schema/experiments.ts"
import { isUuid } from "../../schema/common.ts"
import {
  type AdplatformConnectionRequired,
  type AdplatformWritePermissionMissing,
  type DatabaseUnavailable,
  type InvalidParameter,
  type InvalidState,
  NotFound,
  type ServiceUnavailable,
  ValidationError
} from "../../schema/errors.ts"
import { AdActions } from "../ads/actions/service.ts"
import { OutcomeSeries } from "../attribution/outcome-series/service.ts"
import type { ProfileContext } from "../kernel/principal.ts"
import { routeProfileCall } from "../platform/entity-calls.ts"
import { DEFAULT_PAGE_SIZE, parseCursor, toPage } from "../platform/pagination.ts"
import {
  type DayFigures,
  daysDesign,
  daysOf,
  type DesignInput,
  holdoutDesign,
  PRE_POST_MODEL,
  prePostDesignOf,
  switchbackSchedule
} from "./analysis.ts"
import { render } from "./engine.ts"
import { Experiment, experimentEntityId } from "./entity.ts"
import { ExperimentsRepo } from "./repo.ts"
import { ExperimentAudiences } from "./ports.ts"
import { dateOf, dayNumber, localDate } from "./statistics/index.ts"

/** The longest window, as the analytics reads' longest range. */
export const MAX_WINDOW_DAYS = 366
const DEFAULT_PRE_DAYS = 28
const DEFAULT_HISTORY_DAYS = 28
/** A pre/post's placebos need its fit's days plus many post windows of history. */
const DEFAULT_PRE_POST_HISTORY_DAYS = 180

type EntityFailure = NotFound | InvalidState | DatabaseUnavailable | ServiceUnavailable
type Page = { readonly data: ReadonlyArray<ExperimentWire>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } }

/**
 * An experiment's read and its results through its entity: what the agent tools and the RPC
 * surface call, with nothing of the writes' dependencies (ad actions, ports).
 */
export class ExperimentReads extends Context.Service<ExperimentReads, {
  readonly get: (profile: ProfileContext, id: string) => Effect.Effect<ExperimentWire, EntityFailure>
  readonly results: (profile: ProfileContext, id: string) => Effect.Effect<ExperimentResults, EntityFailure>
}>()("svc/ExperimentReads") {
  static readonly layer = Layer.effect(ExperimentReads)(
    Effect.gen(function*() {
      const entities = yield* Experiment.client
      /** An id that is not a uuid names no experiment: 404 without a call. */
      const entity = (profile: ProfileContext, id: string) =>
        isUuid(id)
          ? Effect.succeed(entities(experimentEntityId(profile.profileId, id.toLowerCase())))
          : Effect.fail(new NotFound({ message: "No experiment with this id on the profile." }))
      const address = (profile: ProfileContext, id: string) => ({ profile_id: profile.profileId, experiment_id: id.toLowerCase() })
      return {
        get: (profile, id) => Effect.flatMap(entity(profile, id), (e) => routeProfileCall(e.Read(address(profile, id)), "experiment_timeout")),
        results: (profile, id) => Effect.flatMap(entity(profile, id), (e) => routeProfileCall(e.Results(address(profile, id)), "experiment_timeout"))
      }
    })
  )
}

export class Experiments extends Context.Service<Experiments, {
  readonly create: (profile: ProfileContext, body: CreateExperiment) => Effect.Effect<ExperimentWire, ValidationError | DatabaseUnavailable>
  readonly list: (profile: ProfileContext, query: ExperimentsQuery) => Effect.Effect<Page, DatabaseUnavailable | InvalidParameter>
  readonly get: (profile: ProfileContext, id: string) => Effect.Effect<ExperimentWire, EntityFailure>
  /** A switchback pauses and resumes its target through the ad actions: it needs a connection that can write ads. */
  readonly start: (
    profile: ProfileContext,
    id: string
  ) => Effect.Effect<ExperimentWire, EntityFailure | AdplatformConnectionRequired | AdplatformWritePermissionMissing>
  readonly stop: (profile: ProfileContext, id: string, reason: StopReason, note: string | null) => Effect.Effect<ExperimentWire, EntityFailure>
  readonly results: (profile: ProfileContext, id: string) => Effect.Effect<ExperimentResults, EntityFailure>
  readonly design: (profile: ProfileContext, body: DesignRequest) => Effect.Effect<Design, ValidationError | DatabaseUnavailable>
}>()("svc/Experiments") {
  static readonly layer = Layer.effect(Experiments)(
    Effect.gen(function*() {
      const repo = yield* ExperimentsRepo
      const series = yield* OutcomeSeries
      const entities = yield* Experiment.client
      const ads = yield* AdActions
      const reads = yield* ExperimentReads
      const audiences = yield* ExperimentAudiences

      const invalid = (message: string) => new ValidationError({ message })

      const windowDays = (window: { readonly start: string; readonly end: string }) => dayNumber(window.end) - dayNumber(window.start) + 1

      const checkWindow = (window: { readonly start: string; readonly end: string }) => {
        if (window.end < window.start) return Effect.fail(invalid("body.window: end is before start."))
        if (windowDays(window) > MAX_WINDOW_DAYS) return Effect.fail(invalid(`body.window: at most ${MAX_WINDOW_DAYS} days.`))
        return Effect.void
      }

      /**
       * The power analysis from the profile's own last `historyDays` whole days: a holdout's list
       * and per-customer outcomes, or the daily series of the metric.
       */
      const designFor = Effect.fn("Experiments.designFor")(function*(profileId: string, input: DesignInput, targetId: string | null) {
        // The profile's local days (decision 0135): yesterday back `historyDays` whole days.
        const timeZone = yield* repo.timeZoneOf(profileId)
        const end = dateOf(dayNumber(localDate(yield* Clock.currentTimeMillis, timeZone)) - 1)
        const start = dateOf(dayNumber(end) - input.historyDays + 1)
        const span = { from: start, until: dateOf(dayNumber(end) + 1), timeZone }
        if (input.kind === "pre_post") {
          // The series the results will read: credit per campaign and day under the pre/post's model.
          const cells = yield* series.creditedPerCampaignDay(profileId, input.metric.conversion_key, PRE_POST_MODEL, span)
          const byCampaign = new Map<string, Map<string, DayFigures>>()
          for (const cell of cells) byCampaign.set(cell.campaign_id, (byCampaign.get(cell.campaign_id) ?? new Map<string, DayFigures>()).set(cell.day, cell))
          return prePostDesignOf(
            input,
            targetId ?? "",
            daysOf(start, end),
            [...byCampaign.entries()].map(([campaignId, byDay]) => ({ campaignId, byDay }))
          )
        }
        if (input.kind === "audience_holdout") {
          const members = yield* series.listMembers(profileId, span.from, timeZone)
          const inList = new Set(members)
          const outcomes = (yield* series.perCustomer(profileId, input.metric.conversion_key, span)).filter((o) => inList.has(o.customer_id))
          return holdoutDesign(input, outcomes, members.length)
        }
        const perDay = new Map((yield* series.perDay(profileId, input.metric.conversion_key, span)).map((d) => [d.day, d]))
        const daily: Array<number> = []
        for (let d = dayNumber(start); d <= dayNumber(end); d++) {
          const figures = perDay.get(dateOf(d))
          daily.push(figures === undefined ? 0 : input.metric.measure === "count" ? figures.conversions : figures.value)
        }
        return daysDesign(input, daily)
      })

      const design = Effect.fn("Experiments.design")(function*(profile: ProfileContext, body: DesignRequest) {
        if (body.window !== undefined) yield* checkWindow(body.window)
        if (body.kind === "pre_post") {
          if (body.target === undefined) return yield* invalid("body.target: required for a pre_post design (the campaign whose change is measured).")
          if (body.target.level !== "campaign") return yield* invalid("body.target.level: a pre_post compares campaigns.")
        } else {
          if (body.target !== undefined) return yield* invalid("body.target: only a pre_post design takes it.")
          if (body.pre_days !== undefined) return yield* invalid("body.pre_days: only a pre_post design takes it.")
        }
        const window = body.window === undefined ? null : windowDays(body.window)
        return yield* designFor(profile.profileId, {
          kind: body.kind,
          metric: body.metric,
          minimumEffect: body.minimum_detectable_effect,
          effectKind: body.effect_kind ?? "relative",
          confidence: body.confidence ?? 0.95,
          power: body.power ?? 0.8,
          // Over the window's own length when one is given: a holdout's rate is the rate over that long.
          historyDays: body.history_days ??
            (body.kind === "pre_post" ? DEFAULT_PRE_POST_HISTORY_DAYS : Math.min(365, Math.max(7, window ?? DEFAULT_HISTORY_DAYS))),
          holdoutFraction: body.holdout_fraction ?? 0.1,
          windowDays: window,
          preDays: body.pre_days ?? DEFAULT_PRE_DAYS
        }, body.target?.id ?? null)
      })

      const create = Effect.fn("Experiments.create")(function*(profile: ProfileContext, body: CreateExperiment) {
        yield* checkWindow(body.window)
        if (body.kind === "audience_holdout") {
          if (body.holdout_fraction === undefined) return yield* invalid("body.holdout_fraction: required for an audience_holdout.")
          if (body.target !== undefined) return yield* invalid("body.target: an audience_holdout targets the customer list, not a campaign.")
        } else {
          if (body.target === undefined) return yield* invalid(`body.target: required for a ${body.kind}.`)
          if (body.holdout_fraction !== undefined) return yield* invalid(`body.holdout_fraction: only an audience_holdout takes it.`)
          if (body.kind === "pre_post" && body.target.level !== "campaign") return yield* invalid("body.target.level: a pre_post compares campaigns.")
        }
        if (body.pre_days !== undefined && body.kind !== "pre_post") return yield* invalid("body.pre_days: only a pre_post takes it.")
        if (body.spend_target !== undefined && body.kind !== "audience_holdout") {
          return yield* invalid("body.spend_target: only an audience_holdout takes it (a switchback's or pre_post's spend is its target's).")
        }
        const salt = randomBytes(16).toString("hex")
        const config: ExperimentConfig = {
          holdout_fraction: body.holdout_fraction ?? null,
          target: body.target ?? null,
          pre_days: body.kind === "pre_post" ? body.pre_days ?? DEFAULT_PRE_DAYS : null,
          schedule: body.kind === "switchback" ? switchbackSchedule(salt, body.window.start, body.window.end) : null,
          ...(body.spend_target === undefined ? {} : { spend_target: body.spend_target })
        }
        const stored = body.design === undefined ? null : yield* designFor(profile.profileId, {
          kind: body.kind,
          metric: body.metric,
          minimumEffect: body.design.minimum_detectable_effect,
          effectKind: body.design.effect_kind ?? "relative",
          confidence: body.design.confidence ?? 0.95,
          power: body.design.power ?? 0.8,
          historyDays: body.kind === "pre_post" ? DEFAULT_PRE_POST_HISTORY_DAYS : Math.min(365, Math.max(7, windowDays(body.window))),
          holdoutFraction: body.holdout_fraction ?? 0.1,
          windowDays: windowDays(body.window),
          preDays: body.pre_days ?? DEFAULT_PRE_DAYS
        }, body.target?.id ?? null)
        const row = yield* repo.insert({
          profileId: profile.profileId,
          id: crypto.randomUUID(),
          kind: body.kind,
          name: body.name,
          config,
          conversionKey: body.metric.conversion_key,
          measure: body.metric.measure,
          targetKey: body.target === undefined ? "customer_list" : `${body.target.level}:${body.target.id}`,
          salt,
          windowStart: body.window.start,
          windowEnd: body.window.end,
          design: stored
        })
        return render(row)
      })

      const list = Effect.fn("Experiments.list")(function*(profile: ProfileContext, query: ExperimentsQuery) {
        const limit = query.limit ?? DEFAULT_PAGE_SIZE
        const after = yield* parseCursor(query.cursor, (keyset) => isUuid(keyset.id))
        const rows = yield* repo.list(profile.profileId, after, limit)
        return toPage(rows, limit, render)
      })

      /** An id that is not a uuid names no experiment: 404 without a call. */
      const entity = (profile: ProfileContext, id: string) =>
        isUuid(id)
          ? Effect.succeed(entities(experimentEntityId(profile.profileId, id.toLowerCase())))
          : Effect.fail(new NotFound({ message: "No experiment with this id on the profile." }))
      const address = (profile: ProfileContext, id: string) => ({ profile_id: profile.profileId, experiment_id: id.toLowerCase() })

      const get = reads.get
      const start = Effect.fn("Experiments.start")(function*(profile: ProfileContext, id: string) {
        const e = yield* entity(profile, id)
        // The kind never changes: read outside the entity, refused before any transition.
        const row = yield* repo.find(profile.profileId, id.toLowerCase())
        if (Option.isSome(row) && row.value.kind === "switchback" && row.value.status === "draft") yield* ads.writeGate(profile)
        const started = yield* routeProfileCall(
          e.Start({ ...address(profile, id), workspace_id: profile.workspaceId, attribution_enabled: profile.attributionEnabled }),
          "experiment_timeout"
        )
        // The holdout leaves the uploaded audience now, not at the list's next daily refresh.
        if (started.kind === "audience_holdout") yield* audiences.refresh(profile.profileId)
        return started
      })
      const stop = Effect.fn("Experiments.stop")(function*(profile: ProfileContext, id: string, reason: StopReason, note: string | null) {
        const e = yield* entity(profile, id)
        const stopped = yield* routeProfileCall(e.Stop({ ...address(profile, id), reason, note }), "experiment_timeout")
        // The holdout's customers are uploaded again at once.
        if (stopped.kind === "audience_holdout") yield* audiences.refresh(profile.profileId)
        return stopped
      })
      const results = reads.results

      return { create, list, get, start, stop, results, design }
    })
  ).pipe(Layer.provide([ExperimentsRepo.layer, OutcomeSeries.layer, AdActions.layer, ExperimentReads.layer]))
}
