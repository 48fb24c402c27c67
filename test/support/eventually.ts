/**
 * Waiting on a condition instead of a fixed sleep: a test polls what it can observe until the
 * condition holds, and fails at a deadline instead of hanging or passing by luck.
 */
import { Duration, Effect } from "effect"

export interface EventuallyOptions {
  /** What is awaited, for the failure message (a function: read when the deadline passes). */
  readonly what: string | (() => string)
  /** The deadline, from the first probe. */
  readonly within: Duration.Input
  /** The pause between probes (default 100 ms). */
  readonly every?: Duration.Input
}

/** The last answer in a failure message: short, and never a throw (spans hold cycles). */
const shown = (answer: unknown): string => {
  try {
    return (JSON.stringify(answer) ?? String(answer)).slice(0, 500)
  } catch {
    return String(answer).slice(0, 500)
  }
}

/**
 * Runs `probe` until `done` accepts its answer and returns that answer; dies naming `options.what`
 * and the last answer once `options.within` has passed. The deadline reads the wall clock and the
 * pause is an `Effect.sleep`: use it where the Clock is live (`it.live`, `excludeTestServices`).
 */
export const eventually = <A, E, R>(
  probe: Effect.Effect<A, E, R>,
  done: (answer: A) => boolean,
  options: EventuallyOptions
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const deadline = Date.now() + Duration.toMillis(options.within)
    while (true) {
      const answer = yield* probe
      if (done(answer)) return answer
      if (Date.now() >= deadline) {
        const what = typeof options.what === "string" ? options.what : options.what()
        const within = Duration.format(Duration.fromInputUnsafe(options.within))
        return yield* Effect.die(new Error(`timed out after ${within} waiting for ${what}; last answer: ${shown(answer)}`))
      }
      yield* Effect.sleep(options.every ?? "100 millis")
    }
  })
