/**
 * Timing a lease take-over (issue 34 item 4, decision 0119): work held by a heartbeat must never be
 * claimed by another runner, and once the heartbeat stops (the process killed) the next claim gets
 * it within 10 s. Claims are polled with deadlines, never a fixed sleep. Used by
 * test/api/lease-takeover.test.ts, test/api/reports.test.ts and test/api/audiences-customer-list.test.ts.
 */
import { assert } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { beatOf } from "../../src/platform/lease.ts"
import { eventually } from "./eventually.ts"

/** The bound issue 34 sets: from the last renewal to another runner's claim. */
export const TAKEOVER_BOUND = Duration.seconds(10)

/** Held past the lease by one more beat: without the heartbeat the lease would have run out. */
export const holdFor = (lease: Duration.Duration) => Duration.sum(lease, beatOf(lease))

/** Polls `claim` for `within`, every 200 ms, and fails if it ever answers true (taken while held). */
export const neverTaken = <E, R>(claim: Effect.Effect<boolean, E, R>, within: Duration.Duration, what: string) =>
  Effect.gen(function*() {
    const until = Date.now() + Duration.toMillis(within)
    while (Date.now() < until) {
      assert.isFalse(yield* claim, `${what} taken while its holder renewed the lease`)
      yield* Effect.sleep("200 millis")
    }
  })

/** Polls `claim` until it answers true, within the bound (and some slack to report the time); answers the milliseconds it took. */
export const takenWithin = <E, R>(claim: Effect.Effect<boolean, E, R>, what: string) =>
  Effect.gen(function*() {
    const started = Date.now()
    yield* eventually(claim, (taken) => taken, { what, within: Duration.sum(TAKEOVER_BOUND, Duration.seconds(5)), every: "100 millis" })
    return Date.now() - started
  })
