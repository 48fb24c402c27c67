/**
 * Runs once per `vitest run`, before any test file. On the embedded database (no DATABASE_URL)
 * it migrates one PGlite data directory through the real CLI (`migrate`) and hands its path to
 * the test processes in SVC_TEST_PGLITE_TEMPLATE: `testSettings()` (test/support/app.ts) starts
 * each app on a copy of it (about 0.1 s) instead of a fresh initdb plus every migration (about
 * 8 s each, over 100 apps a run). Startup still runs the migrator on the copy, which finds nothing
 * to do; the start-up tests (test/e2e/lifecycle.test.ts, test/e2e/cli-live-service.test.ts,
 * test/unit/startup-config.test.ts) keep an empty directory, so migrating one stays covered.
 * The copies are made beside the template and removed with it when the run ends.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const cli = fileURLToPath(new URL("../../src/main/cli.ts", import.meta.url))

export default function setup(): (() => void) | undefined {
  if (process.env["DATABASE_URL"] !== undefined && process.env["DATABASE_URL"] !== "") return undefined
  // A caller's own template (an already migrated directory) is used as is.
  if (process.env["SVC_TEST_PGLITE_TEMPLATE"] !== undefined) return undefined
  const root = mkdtempSync(join(tmpdir(), "svc-pglite-template-"))
  const dataDir = join(root, "db")
  const env: Record<string, string | undefined> = { ...process.env, SVC_DATA_DIR: dataDir }
  delete env["DATABASE_URL"]
  // The vitest process runs on the pinned Node (npm scripts): the CLI runs under the same binary.
  execFileSync(process.execPath, [cli, "migrate"], { env, stdio: ["ignore", "ignore", "inherit"], timeout: 120_000 })
  process.env["SVC_TEST_PGLITE_TEMPLATE"] = dataDir
  return () => rmSync(root, { recursive: true, force: true })
}
