import { completeCopiedColumn, CREDITS_TOUCH_TIME } from "./support/copied-column.ts"

/**
 * Credit rows carry their touch's time, `touch_at` (issue 35 part 3, decision 0148): touches are
 * monthly partitions keyed by (id, profile_id, occurred_at), and a read from a credit row to its
 * touch by id alone probes every month's index (the raw-facts breakdown went from 0.6 s to 1.8 s
 * once a 10M history was split into months). With the time, each probe names the whole key and
 * reads the touch's month only.
 *
 * Filled here, or beforehand by `partitions prepare attribution_credits` while writes go on; the
 * engine writes it with every row from now on. A touch's time never changes (its declared source's
 * key names it, migration 0071), so the copy never goes stale.
 */
export default completeCopiedColumn(CREDITS_TOUCH_TIME)
