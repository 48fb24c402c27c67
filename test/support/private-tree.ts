/**
 * The embedded data directory is the service user's alone (decision 0105): every directory 0700
 * and every regular file 0600. Shared by the in-process check (test/unit/startup-settings.test.ts)
 * and the process starts (test/e2e/startup-defaults.test.ts).
 */
import { assert } from "@effect/vitest"
import { readdirSync, statSync } from "node:fs"
import { join } from "node:path"

/** Every directory and regular file under `root` (itself included), with its permission bits. */
const tree = (root: string): ReadonlyArray<{ readonly path: string; readonly directory: boolean; readonly mode: number }> => {
  const found = [{ path: root, directory: true, mode: statSync(root).mode & 0o777 }]
  for (const name of readdirSync(root, { recursive: true, encoding: "utf8" })) {
    const path = join(root, name)
    const stats = statSync(path, { throwIfNoEntry: false })
    if (stats === undefined || (!stats.isDirectory() && !stats.isFile())) continue
    found.push({ path, directory: stats.isDirectory(), mode: stats.mode & 0o777 })
  }
  return found
}

export const assertPrivate = (root: string) => {
  const entries = tree(root)
  // PGlite's initdb alone writes about a thousand files: the check is not over an empty tree.
  assert.isAbove(entries.filter((entry) => !entry.directory).length, 500)
  const loose = entries.filter((entry) => entry.mode !== (entry.directory ? 0o700 : 0o600))
  assert.deepStrictEqual(loose.map((entry) => `${entry.path} ${entry.mode.toString(8)}`), [])
}
