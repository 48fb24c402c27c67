/**
 * Leased background work (webhook deliveries, provider syncs, export batches, attribution
 * replays): short leases renewed by a heartbeat while the work runs (decision 0119), and what a
 * worker tells when its lease is gone.
 */
import { Cause, Data, Duration, Effect, Option } from "effect"

/** Another runner took the job over (our lease expired): stop without touching it. */
export class LeaseLost extends Data.TaggedError("LeaseLost")<{ readonly jobId: string }> {}

/** True when the job failed because its lease was lost (then the job is another runner's). */
export const lostLease = (cause: Cause.Cause<unknown>): boolean => {
  const error = Cause.findErrorOption(cause)
  return Option.isSome(error) && error.value instanceof LeaseLost
}

/**
 * The default lease of a queue's work: short, so that work a killed process held is taken over
 * within seconds (eight, plus the next poll: under 10 s); a live holder keeps it by its heartbeat.
 */
export const defaultLease = Duration.seconds(8)

/** Whole seconds of a lease, at least one (the statements take `make_interval(secs => …)`). */
export const leaseSecondsOf = (lease: Duration.Duration): number => Math.max(1, Math.ceil(Duration.toSeconds(lease)))

/**
 * Whether a holder may still act on a lease taken or last renewed by a statement sent at `since`
 * (`performance.now()`, the holder's monotonic clock): within three quarters of it. Past that, a
 * renewal late or the process stalled, another runner may have taken the work over; the holder
 * stops before sending anything more (decision 0119).
 */
export const leaseTrusted = (lease: Duration.Duration, since: number): boolean =>
  performance.now() - since < Duration.toMillis(lease) * 3 / 4

/** A third of the lease: two renewals may be late or fail before the lease runs out. */
export const beatOf = (lease: Duration.Duration): Duration.Duration => Duration.millis(Math.max(50, Duration.toMillis(lease) / 3))

/**
 * Calls `renew` every third of `lease`, for ever. A renewal that fails (the database away) is
 * logged and tried at the next beat: if the lease runs out meanwhile, the fenced writes of the
 * work write nothing, and another runner takes it over.
 */
export const heartbeat = <A, E, R>(lease: Duration.Duration, renew: Effect.Effect<A, E, R>): Effect.Effect<never, never, R> =>
  Effect.forever(
    Effect.andThen(
      Effect.sleep(beatOf(lease)),
      Effect.ignore(renew, { log: "Warn", message: "lease renewal failed; tried again at the next beat" })
    )
  )

/**
 * Runs `work` of one job while its lease is renewed by a heartbeat; a renewal answering false
 * (the job is another runner's) interrupts the work and fails with `LeaseLost`, so it writes
 * nothing more.
 */
export const whileLeased = <E2, R2>(jobId: string, lease: Duration.Duration, renew: Effect.Effect<boolean, E2, R2>) =>
<A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<A, E | LeaseLost, R | R2> =>
  Effect.raceFirst(
    work,
    Effect.forever(
      Effect.andThen(
        Effect.sleep(beatOf(lease)),
        Effect.flatMap(
          Effect.catchCause(renew, (cause) =>
            Effect.as(Effect.logWarning("lease renewal failed; tried again at the next beat", { job_id: jobId, cause }), true)),
          (ours) => ours ? Effect.void : Effect.fail(new LeaseLost({ jobId }))
        )
      )
    )
  )
