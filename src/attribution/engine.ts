/**
 * The crediting engine: the pure credit models (src/attribution/models) over what crediting
 * reads (src/attribution/repo.ts): it credits conversions under every model, writes the credit
 * rows (src/attribution/credits/repo.ts) and marks the conversions (src/attribution/conversions/repo.ts),
 * and builds a profile's `svc_model` path statistics. Its writes run inside the worker's
 * transactions. Decisions 0030 and 0035 (replay performance: rows written as a difference,
 * statistics aggregated in SQL).
 */
import { Context, Effect, Layer } from "effect"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { EventsRepo } from "./conversions/repo.ts"
import { type ChangedCredits, CreditsRepo, emptyCreditColumns, type GoneCredits } from "./credits/repo.ts"
import { creditAll, type PathStats, type TouchInput } from "./models/index.ts"
import type { QueuedConversion } from "./queued-conversion.ts"
import { AttributionRepo, type CandidateConversion, type CandidateTouch, type CreditTarget, type StepRow } from "./repo.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Each conversion's path: its candidate touches (`candidateTouches`, path order) as the models take them. */
export const pathsByConversion = (touches: ReadonlyArray<CandidateTouch>): Map<string, Array<TouchInput>> => {
  const paths = new Map<string, Array<TouchInput>>()
  for (const touch of touches) {
    let list = paths.get(touch.conversion_id)
    if (list === undefined) paths.set(touch.conversion_id, list = [])
    list.push({ id: touch.id, occurred_at: touch.occurred_ms, kind: touch.kind, channel: touch.channel })
  }
  return paths
}

/**
 * `PathStats` from grouped path steps: exactly what `buildPathStats` counts over the paths
 * themselves (a path per first step; start, transitions between different channels, and the
 * last channel of converting and non-converting paths; channels sorted by code units).
 */
export const statsFromSteps = (steps: ReadonlyArray<StepRow>): PathStats => {
  const names = new Set<string>()
  for (const step of steps) {
    names.add(step.channel)
    if (step.previous !== null) names.add(step.previous)
  }
  const channels = [...names].sort(byCodeUnits)
  const index = new Map(channels.map((channel, i) => [channel, i] as const))
  const k = channels.length
  const start = new Array<number>(k).fill(0)
  const conversions = new Array<number>(k).fill(0)
  const nulls = new Array<number>(k).fill(0)
  const transitions = Array.from({ length: k }, () => new Array<number>(k).fill(0))
  let convertingPaths = 0
  let totalPaths = 0
  for (const step of steps) {
    const to = index.get(step.channel) ?? 0
    if (step.previous === null) {
      start[to] = (start[to] ?? 0) + step.n
      totalPaths += step.n
      if (step.converted) convertingPaths += step.n
    } else if (step.previous !== step.channel) {
      const row = transitions[index.get(step.previous) ?? 0]
      if (row !== undefined) row[to] = (row[to] ?? 0) + step.n
    }
    if (step.last) {
      const counts = step.converted ? conversions : nulls
      counts[to] = (counts[to] ?? 0) + step.n
    }
  }
  return { converting_paths: convertingPaths, total_paths: totalPaths, channels, start, transitions, conversions, nulls }
}

export class CreditEngine extends Context.Service<CreditEngine, {
  /** Marks a conversion credited with no rows (one whose crediting fails; a replay tries it again). */
  readonly markWithoutCredit: (conversion: QueuedConversion) => Repo<void>
  /**
   * Replaces the credit rows of `targets` (every model), refreshes their cash and eligibility
   * flags from their definitions and takes them out of the credit queue. Answers how many credit rows they have now.
   */
  readonly credit: (
    targets: ReadonlyArray<CreditTarget>,
    statsOf: (profileId: string) => PathStats | undefined
  ) => Repo<number>
  /** The profile's `svc_model` statistics from its converting and non-converting channel paths. */
  readonly pathStats: (profileId: string) => Repo<PathStats>
  /**
   * Read-only: the creditable touches of each conversion's customer in its window, as crediting
   * gathers them (a partner-data preview's "before", src/ingestion/partner).
   */
  readonly candidateTouches: (conversions: ReadonlyArray<CandidateConversion>) => Repo<ReadonlyArray<CandidateTouch>>
}>()("svc/CreditEngine") {
  static readonly layer = Layer.effect(CreditEngine)(
    Effect.gen(function*() {
      const repo = yield* AttributionRepo
      const credits = yield* CreditsRepo
      const conversions = yield* EventsRepo

      const markWithoutCredit = (conversion: QueuedConversion) =>
        Effect.gen(function*() {
          yield* credits.clear(conversion.id)
          yield* conversions.markCredited(conversion)
        })

      /**
       * Credits `targets` and writes the result as a difference against the stored rows (decision
       * 0035): rows no longer produced are deleted, changed rows updated in place, new rows
       * inserted, unchanged rows left alone. The stored rows end up exactly `creditAll`'s rows.
       * Answers how many rows the conversions have now.
       */
      const credit = (targets: ReadonlyArray<CreditTarget>, statsOf: (profileId: string) => PathStats | undefined) =>
        Effect.gen(function*() {
          if (targets.length === 0) return 0
          const ids = targets.map((target) => target.id)
          const profiles = targets.map((target) => target.profile_id)
          // Before reading touches, until the rows commit (migration 0066: what replaced the foreign keys).
          yield* repo.lockCrediting(profiles)
          const creditable = targets.filter((target) => target.eligible && target.customer_id !== null)
          const touches = creditable.length === 0 ? [] : yield* repo.candidateTouches(creditable)
          const byConversion = pathsByConversion(touches)
          // A touch's exact time, written with each of its credit rows (`touch_at`, migration 0075).
          const touchAt = new Map(touches.map((touch) => [touch.id, touch.occurred_at] as const))
          const stored = yield* credits.stored(ids, profiles, targets.map((target) => target.occurred_at))
          const targetOf = new Map(targets.map((target) => [target.id, target] as const))
          const storedAt = new Map<string, number>()
          for (let i = 0; i < stored.ctid.length; i++) storedAt.set(`${stored.conversion[i]}|${stored.model[i]}|${stored.touch[i]}`, i)
          const kept = new Uint8Array(stored.ctid.length)
          const added = emptyCreditColumns()
          const changed: ChangedCredits = { profile: [], convertedAt: [], ctid: [], position: [], share: [], credited: [], inWindow: [] }
          let rows = 0
          for (const target of creditable) {
            const results = creditAll(
              { occurred_at: target.occurred_ms, lookback_window_days: target.window_days },
              byConversion.get(target.id) ?? [],
              statsOf(target.profile_id)
            )
            for (const result of results) {
              for (const row of result.rows) {
                rows++
                const at = storedAt.get(`${target.id}|${result.model}|${row.touch_id}`)
                if (at === undefined) {
                  added.profile.push(target.profile_id)
                  added.conversion.push(target.id)
                  added.convertedAt.push(target.occurred_at)
                  added.model.push(result.model)
                  added.touch.push(row.touch_id)
                  added.touchAt.push(touchAt.get(row.touch_id) ?? "")
                  added.position.push(row.position)
                  added.share.push(row.credit_share)
                  added.credited.push(row.is_credited)
                  added.inWindow.push(row.in_window)
                  continue
                }
                kept[at] = 1
                if (
                  stored.position[at] !== row.position || stored.share[at] !== row.credit_share ||
                  stored.credited[at] !== row.is_credited || stored.in_window[at] !== row.in_window
                ) {
                  changed.profile.push(target.profile_id)
                  changed.convertedAt.push(target.occurred_at)
                  changed.ctid.push(stored.ctid[at] ?? "")
                  changed.position.push(row.position)
                  changed.share.push(row.credit_share)
                  changed.credited.push(row.is_credited)
                  changed.inWindow.push(row.in_window)
                }
              }
            }
          }
          const gone: GoneCredits = { profile: [], convertedAt: [], ctid: [] }
          for (let i = 0; i < stored.ctid.length; i++) {
            if (kept[i] === 1) continue
            const target = targetOf.get(stored.conversion[i] ?? "")
            gone.profile.push(target?.profile_id ?? "")
            gone.convertedAt.push(target?.occurred_at ?? "")
            gone.ctid.push(stored.ctid[i] ?? "")
          }
          yield* credits.write(gone, changed, added)
          yield* conversions.settleCredited(ids, profiles, targets.map((target) => target.occurred_at), targets.map((target) => target.queued))
          return rows
        })

      /**
       * The profile's `svc_model` statistics: the path steps counted in SQL (decision 0035), turned
       * into what `buildPathStats` counts over the channel paths of decision 0030.
       */
      const pathStats = (profileId: string) => Effect.map(repo.pathSteps(profileId), statsFromSteps)

      const candidateTouches = Effect.fn("CreditEngine.candidateTouches")(function*(conversions: ReadonlyArray<CandidateConversion>) {
        return yield* repo.candidateTouches(conversions)
      })

      return { markWithoutCredit, credit, pathStats, candidateTouches }
    })
  ).pipe(Layer.provide([AttributionRepo.layer, CreditsRepo.layer, EventsRepo.layer]))
}
