/**
 * Partition maintenance (issue 35 part 3, decision 0133): for each registered table, the current
 * month and `MONTHS_AHEAD` more exist before rows arrive for them, and a partition whose whole
 * range is older than the table's retention is dropped. Idempotent (what exists is not created
 * again, what is gone is not dropped again) and safe with several runners: each table's pass holds
 * its advisory lock, and a runner that finds it held skips the table.
 */
import { Clock, Context, Effect, Layer, Metric, Option } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { partitionsCreated, partitionsDropped } from "../../platform/metrics.ts"
import { MONTHS_AHEAD, monthStart, PARTITIONED_TABLES, partitionName, type PartitionedTable } from "./registry.ts"
import { type PartitionRow, PartitionsRepo } from "./repo.ts"

const DAY_MS = 86_400_000

export interface TablePass {
  readonly table: string
  readonly created: ReadonlyArray<string>
  readonly dropped: ReadonlyArray<string>
  /** Another runner held the table's lock: it did the pass. */
  readonly skipped: boolean
}

/** Whether a partition's range meets `[from, to)` (a null bound is open). */
const overlaps = (row: PartitionRow, from: number, to: number) =>
  !row.is_default && (row.from_ms === null || row.from_ms < to) && (row.to_ms === null || row.to_ms > from)

/** The months to create and the partitions to drop for `entry` at `now` (pure: tested on its own). */
export const plan = (entry: PartitionedTable, partitions: ReadonlyArray<PartitionRow>, now: Date) => {
  const create: Array<{ readonly name: string; readonly from: Date; readonly to: Date }> = []
  for (let offset = 0; offset <= MONTHS_AHEAD; offset++) {
    const from = monthStart(now, offset)
    const to = monthStart(now, offset + 1)
    if (!partitions.some((row) => overlaps(row, from.getTime(), to.getTime()))) {
      create.push({ name: partitionName(entry.table, from), from, to })
    }
  }
  const horizon = entry.retentionDays === null ? null : now.getTime() - entry.retentionDays * DAY_MS
  const drop = horizon === null
    ? []
    : partitions.filter((row) => !row.is_default && row.to_ms !== null && row.to_ms <= horizon).map((row) => row.name)
  return { create, drop }
}

export class PartitionMaintenance extends Context.Service<PartitionMaintenance, {
  /** One pass over `tables` (the registry by default) as of `now` (the clock by default). */
  readonly run: (options?: {
    readonly tables?: ReadonlyArray<PartitionedTable>
    readonly now?: Date
  }) => Effect.Effect<ReadonlyArray<TablePass>, DatabaseUnavailable>
}>()("svc/PartitionMaintenance") {
  static readonly layer = Layer.effect(PartitionMaintenance)(
    Effect.gen(function*() {
      const repo = yield* PartitionsRepo

      const pass = (entry: PartitionedTable, now: Date) =>
        Effect.map(
          repo.locked(entry.table, Effect.gen(function*() {
            const { create, drop } = plan(entry, yield* repo.list(entry.table), now)
            for (const month of create) yield* repo.create(entry.table, month.name, month.from, month.to)
            for (const name of drop) yield* repo.drop(entry.table, name)
            return { created: create.map((month) => month.name), dropped: drop }
          })),
          Option.match({
            onNone: (): TablePass => ({ table: entry.table, created: [], dropped: [], skipped: true }),
            onSome: (done): TablePass => ({ table: entry.table, ...done, skipped: false })
          })
        ).pipe(
          Effect.tap((done) =>
            Effect.all([
              done.created.length === 0 ? Effect.void : Metric.update(Metric.withAttributes(partitionsCreated, { table: entry.table }), done.created.length),
              done.dropped.length === 0 ? Effect.void : Metric.update(Metric.withAttributes(partitionsDropped, { table: entry.table }), done.dropped.length),
              done.created.length + done.dropped.length === 0
                ? Effect.void
                : Effect.logInfo("partition maintenance", { table: entry.table, created: done.created, dropped: done.dropped })
            ], { discard: true })
          )
        )

      const run = Effect.fn("PartitionMaintenance.run")(function*(options?: {
        readonly tables?: ReadonlyArray<PartitionedTable>
        readonly now?: Date
      }) {
        const now = options?.now ?? new Date(yield* Clock.currentTimeMillis)
        const passes: Array<TablePass> = []
        // One table after another: each holds its parent's lock only for its own pass.
        for (const entry of options?.tables ?? PARTITIONED_TABLES) passes.push(yield* pass(entry, now))
        // A key a migration left to be validated (decision 0146), each under its own lock. A row
        // that breaks one is reported and the key left as it is: new rows are checked already.
        for (const key of yield* repo.unvalidated) {
          const done = yield* repo.locked(`validate:${key.table}.${key.name}`, repo.validate(key.table, key.name))
          if (Option.isSome(done)) {
            yield* done.value
              ? Effect.logInfo("partition maintenance validated a foreign key", key)
              : Effect.logWarning("partition maintenance: stored rows break a foreign key; it stays unvalidated", key)
          }
        }
        return passes
      })

      return { run }
    })
  ).pipe(Layer.provide(PartitionsRepo.layer))
}
