import { toMonthlyPartitions } from "./support/monthly-partitions.ts"

/**
 * The outbox becomes monthly range partitions over `created_at` (issue 35 part 3, decision 0141),
 * converted in place like the logs of migration 0067 (no row copied). Its rows then go when their
 * month is past the spec's 90-day replay window (`GET /api/v1/outcomes/recorded`), by dropping the
 * month, where until now nothing removed them at all.
 *
 * What held it back in 0067 was the fan-out's read of the rest of each claimed producer batch: it
 * now bounds each batch to the instant its transaction wrote it (src/kernel/outbox/repo.ts), so the
 * read prunes to that month and the planner's estimate no longer counts a row per partition.
 */
export default toMonthlyPartitions({ table: "outbox", column: "created_at" })
