/**
 * `SVC_DATA_DIR` holds the whole embedded database, the lock's operator token and, outside
 * production, the generated secrets key: it is the service user's alone (decision 0105).
 * PGlite's initdb writes its files 0666 whatever the umask, so the tree is tightened after
 * every open; the files PostgreSQL creates later it creates 0600 itself.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync } from "node:fs"
import { join } from "node:path"

export const PRIVATE_DIR_MODE = 0o700
export const PRIVATE_FILE_MODE = 0o600

const errorCode = (error: unknown) => error instanceof Error && "code" in error ? String(error.code) : String(error)

/** Sets `mode` unless it is already so; answers the problem, if any (a file not ours: EPERM). */
const tighten = (path: string, mode: number): string | undefined => {
  try {
    if ((lstatSync(path).mode & 0o777) !== mode) chmodSync(path, mode)
    return undefined
  } catch (error) {
    // Gone meanwhile: nothing left to protect.
    return errorCode(error) === "ENOENT" ? undefined : `${path}: ${errorCode(error)}`
  }
}

/**
 * Creates `dir` (and missing parents) 0700, or tightens an existing one to 0700. Answers what
 * could not be tightened (an existing directory owned by someone else), for a warning.
 */
export const privateDir = (dir: string): ReadonlyArray<string> => {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
  const problem = tighten(dir, PRIVATE_DIR_MODE)
  return problem === undefined ? [] : [problem]
}

/**
 * Every directory under `dir` (itself included) 0700 and every file 0600; symbolic links are
 * neither followed nor changed. Answers what could not be tightened, for a warning.
 */
export const privateTree = (dir: string): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const walk = (path: string) => {
    const problem = tighten(path, PRIVATE_DIR_MODE)
    if (problem !== undefined) problems.push(problem)
    let entries
    try {
      entries = readdirSync(path, { withFileTypes: true })
    } catch (error) {
      if (errorCode(error) !== "ENOENT") problems.push(`${path}: ${errorCode(error)}`)
      return
    }
    for (const entry of entries) {
      const child = join(path, entry.name)
      if (entry.isDirectory()) walk(child)
      else if (entry.isFile()) {
        const fileProblem = tighten(child, PRIVATE_FILE_MODE)
        if (fileProblem !== undefined) problems.push(fileProblem)
      }
    }
  }
  walk(dir)
  return problems
}
