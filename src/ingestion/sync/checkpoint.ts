/**
 * Where a provider sync resumes after a crash (decision 0065, `sync_jobs.checkpoint`): the
 * provider's instant of the last wholly written batch, used as an inclusive lower bound.
 */

/** The later of a start and a checkpoint (an unreadable checkpoint is ignored). */
export const laterOf = (start: Date | undefined, checkpoint: string | null): Date | undefined => {
  const at = checkpoint === null ? Number.NaN : Date.parse(checkpoint)
  if (Number.isNaN(at)) return start
  return start === undefined || at > start.getTime() ? new Date(at) : start
}

/** The latest of a batch's instants, as the provider wrote it. */
export const latestOf = (instants: ReadonlyArray<string>): string =>
  instants.reduce((latest, at) => (Date.parse(at) > Date.parse(latest) ? at : latest))
