/**
 * Whether the process holding a lease is alive (decision 0150).
 *
 * A lease alone tells a dead holder from a live one only when it runs out: after a SIGKILL its
 * work waits the whole lease. Each process therefore holds a session advisory lock on a key of
 * its own, on one connection kept for the purpose, and names that key in the leases it takes.
 * PostgreSQL lets go of a session's locks when the session ends, and a killed process's sessions
 * end as soon as the server reads the closed socket; a claimer that finds a lease whose key no
 * session holds takes the work over at once instead of waiting the lease out.
 *
 * The key is random; a new one is taken whenever the lock's connection had to be opened again
 * (the old key's leases may already be someone else's). While the lock is not held, `holder` is
 * none and leases are taken without a key: they are then taken over by expiry only, as before.
 * Leases stay fenced either way: a holder taken over by mistake stops at its next fenced write.
 *
 * The embedded database is one session of this one process: the lock is taken once and lasts
 * as long as the database is open.
 */
import { Context, Duration, Effect, Layer, Ref, Schedule } from "effect"
import { randomBytes } from "node:crypto"
import type { Fragment } from "effect/sql/Statement"
import { SqlClient } from "effect/sql/SqlClient"
import { DatabaseInfo } from "./database.ts"

/** How often the lock's connection is checked (a lost connection means the lock is gone). */
const CHECK_EVERY = Duration.seconds(2)

/** A random positive 62-bit key, as PostgreSQL's `bigint` text. */
const newKey = (): string => (BigInt.asUintN(62, randomBytes(8).readBigUInt64BE()) + 1n).toString()

export class RunnerLiveness extends Context.Service<RunnerLiveness, {
  /** This process's key while its lock is held (a lease taken now names it), else null. */
  readonly holder: Effect.Effect<string | null>
}>()("svc/RunnerLiveness") {
  static readonly layer = Layer.effect(RunnerLiveness)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const info = yield* DatabaseInfo
      const held = yield* Ref.make<string | null>(null)

      if (info.mode === "embedded") {
        const key = newKey()
        yield* sql`SELECT pg_advisory_lock(${key}::bigint)`.pipe(
          Effect.tap(() => Ref.set(held, key)),
          Effect.catchCause((cause) => Effect.logWarning("liveness lock not taken; leases are taken over by expiry only", { cause }))
        )
        return { holder: Ref.get(held) }
      }

      // One connection of the pool, kept: the lock lives as long as its session.
      const session = Effect.scoped(Effect.gen(function*() {
        const connection = yield* sql.reserve
        const key = newKey()
        const [row] = yield* connection.executeValues("SELECT pg_try_advisory_lock($1::bigint)", [key])
        if (row?.[0] !== true) return
        yield* Ref.set(held, key)
        yield* Effect.forever(Effect.andThen(Effect.sleep(CHECK_EVERY), connection.executeValues("SELECT 1", [])))
      })).pipe(Effect.ensuring(Ref.set(held, null)))

      yield* session.pipe(
        Effect.catchCause((cause) => Effect.logWarning("liveness lock lost; taken again", { cause })),
        Effect.repeat(Schedule.spaced(Duration.seconds(1))),
        Effect.forkScoped
      )
      return { holder: Ref.get(held) }
    })
  )
}

/**
 * True where `column` names a holder whose lock no session holds any more (its process died);
 * false where it is null (taken without a key: expiry decides).
 *
 * `OFFSET 0` keeps the check a subplan run for each row. Made an anti-join, an `UPDATE` that
 * waited for the row's lock (another claimer took the job over meanwhile) rechecks the new row
 * against the lock rows it joined before: the old holder's absence, so it took a live holder's job.
 */
export const holderGone = (sql: SqlClient, column: string): Fragment =>
  sql.literal(`(${column} IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
      AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
      AND l.classid = (${column} >> 32)::oid AND l.objid = (${column} & 4294967295)::oid
    OFFSET 0))`)

/** A running job (`running`, its table's condition) whose lease still runs but whose holder died. */
export const orphanedLease = (sql: SqlClient, running: Fragment): Fragment =>
  sql`${running} AND lease_until >= now() AND ${holderGone(sql, "lease_holder")}`

/**
 * Ends the lease of each orphaned job of `table`: the queue's sweep and claim then see it expired
 * and treat it as they treat any expired lease (attempts and fencing unchanged).
 */
export const reapStatement = (sql: SqlClient, table: string, running: Fragment) =>
  sql`UPDATE ${sql.literal(table)} SET lease_until = now() - interval '1 second', lease_holder = NULL WHERE ${orphanedLease(sql, running)}`
