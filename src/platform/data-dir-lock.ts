/**
 * The embedded database's data directory is opened by one process at a time (decision 0052).
 * PGlite is single-process: two processes on one directory abort in WASM and can damage it.
 *
 * The opener creates `SVC_DATA_DIR/svc.lock` exclusively, holding its pid, the port it serves on
 * (once listening) and a random operator token, readable by the owner only. The CLI reads the
 * file: a live service is reached over loopback HTTP with that token; anything else refuses.
 * A lock whose pid is dead is stale and taken over.
 */
import { Context, Data, Effect, Layer, Option, Redacted, Schema } from "effect"
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs"
import { randomBytes } from "node:crypto"
import { join } from "node:path"

export const LOCK_FILE = "svc.lock"

export const LockContents = Schema.Struct({
  pid: Schema.Int,
  /** `service` serves HTTP (port set once listening); `cli` is a one-shot command. */
  kind: Schema.Literals(["service", "cli"]),
  port: Schema.NullOr(Schema.Int),
  host: Schema.NullOr(Schema.String),
  token: Schema.String,
  started_at: Schema.String
})
export type LockContents = typeof LockContents.Type

const decodeContents = Schema.decodeUnknownOption(Schema.fromJsonString(LockContents))

/** The data directory is held by another live process. */
export class DataDirLocked extends Data.TaggedError("DataDirLocked")<{
  readonly dataDir: string
  readonly holder: LockContents
}> {
  override get message() {
    const what = this.holder.kind === "service"
      ? `the service (pid ${this.holder.pid}${this.holder.port === null ? ", starting" : `, port ${this.holder.port}`})`
      : `a CLI command (pid ${this.holder.pid})`
    return `the embedded database in ${this.dataDir} is open in ${what}; stop it first, or use DATABASE_URL ` +
      `(one process at a time can open an embedded database; decision 0052)`
  }
}

const isAlive = (pid: number): boolean => {
  if (pid === process.pid) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return error instanceof Error && "code" in error && error.code === "EPERM"
  }
}

const lockPath = (dataDir: string) => join(dataDir, LOCK_FILE)

/** The live holder of `dataDir`, if any (a stale or unreadable file is no holder). */
export const readHolder = (dataDir: string): Option.Option<LockContents> => {
  let text: string
  try {
    text = readFileSync(lockPath(dataDir), "utf8")
  } catch {
    return Option.none()
  }
  return Option.filter(decodeContents(text), (contents) => isAlive(contents.pid))
}

const writeExclusive = (path: string, contents: LockContents): boolean => {
  let fd: number
  try {
    fd = openSync(path, "wx", 0o600)
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "EEXIST") return false
    throw error
  }
  try {
    writeSync(fd, JSON.stringify(contents))
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  return true
}

/** Takes the lock (a stale one is removed first) or fails with the live holder. */
const take = (dataDir: string, kind: LockContents["kind"]): Effect.Effect<LockContents, DataDirLocked> =>
  Effect.suspend(() => {
    const contents: LockContents = {
      pid: process.pid,
      kind,
      port: null,
      host: null,
      token: randomBytes(32).toString("base64url"),
      started_at: new Date().toISOString()
    }
    const path = lockPath(dataDir)
    for (let attempt = 0; attempt < 3; attempt++) {
      if (writeExclusive(path, contents)) return Effect.succeed(contents)
      const holder = readHolder(dataDir)
      if (Option.isSome(holder)) return Effect.fail(new DataDirLocked({ dataDir, holder: holder.value }))
      // Stale (dead pid) or half-written by a process that died: remove and try again.
      rmSync(path, { force: true })
    }
    return Effect.die(new Error(`could not take ${path}`))
  })

/** Removes the lock if it is still ours. */
const release = (dataDir: string, token: string) =>
  Effect.sync(() => {
    const path = lockPath(dataDir)
    try {
      const current = decodeContents(readFileSync(path, "utf8"))
      if (Option.isSome(current) && current.value.token === token) rmSync(path, { force: true })
    } catch {
      // Already gone.
    }
  })

export interface DataDirLockShape {
  /** The per-start operator token accepted from loopback peers; none on PostgreSQL. */
  readonly operatorToken: Option.Option<Redacted.Redacted<string>>
  /** Records the port the service listens on, so the CLI can reach it. */
  readonly announce: (port: number, host: string) => Effect.Effect<void>
}

export class DataDirLock extends Context.Service<DataDirLock, DataDirLockShape>()("svc/DataDirLock") {
  /** On PostgreSQL several processes share the database: nothing to hold. */
  static readonly none = Layer.succeed(DataDirLock)({ operatorToken: Option.none(), announce: () => Effect.void })
}

/** Holds `dataDir` for the scope's life (released on close). */
export const holdDataDir = (dataDir: string, kind: LockContents["kind"]) =>
  Effect.map(
    Effect.acquireRelease(take(dataDir, kind), (contents) => release(dataDir, contents.token)),
    (contents): DataDirLockShape => ({
      operatorToken: Option.some(Redacted.make(contents.token)),
      announce: (port, host) =>
        Effect.sync(() => {
          const path = lockPath(dataDir)
          const temporary = `${path}.${process.pid}.tmp`
          const fd = openSync(temporary, "w", 0o600)
          try {
            writeSync(fd, JSON.stringify({ ...contents, port, host }))
            fsyncSync(fd)
          } finally {
            closeSync(fd)
          }
          renameSync(temporary, path)
        })
    })
  )
