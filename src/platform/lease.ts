/** Leased background jobs (attribution replays, provider syncs): what a worker tells when its lease is gone. */
import { Cause, Data, Option } from "effect"

/** Another runner took the job over (our lease expired): stop without touching it. */
export class LeaseLost extends Data.TaggedError("LeaseLost")<{ readonly jobId: string }> {}

/** True when the job failed because its lease was lost (then the job is another runner's). */
export const lostLease = (cause: Cause.Cause<unknown>): boolean => {
  const error = Cause.findErrorOption(cause)
  return Option.isSome(error) && error.value instanceof LeaseLost
}
