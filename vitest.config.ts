import { availableParallelism } from "node:os"
import { configDefaults, defineConfig } from "vitest/config"

/**
 * Multi-process cluster and chaos tests (several service processes, SIGKILL fail-over): not in the
 * default run, run by `npm run test:chaos` (needs DATABASE_URL, like these files themselves). The
 * behaviour each checks across processes has an in-process test in the default run (README, Tests).
 */
export const CHAOS_TESTS = [
  "test/cluster/two-runners.test.ts",
  "test/cluster/tracing.test.ts",
  "test/cluster/key-revocation.test.ts"
]

/**
 * Tests that start the service (or a browser) as separate processes and wait on their start-up,
 * shutdown and timing: not in the default run, run one file at a time by `npm run test:process`
 * (`.ci/run` runs it on PostgreSQL and on PGlite). Beside the parallel default run they would
 * compete for the same cores and their start-up deadlines would measure the machine's load.
 */
export const PROCESS_TESTS = [
  // Every process and browser test (lifecycle, drain under a busy CPU, start-up defaults, browsers).
  "test/e2e/**/*.test.ts",
  // The entry points' start-up checks and the CLI, a Node process per case (10 of them, ~60 s); the
  // configuration rules without a process are test/unit/startup-settings.test.ts, in the default run.
  "test/unit/startup-config.test.ts"
]

const separate = process.env["SVC_TEST_CHAOS"] === "1"
  ? CHAOS_TESTS
  : process.env["SVC_TEST_PROCESS"] === "1"
  ? PROCESS_TESTS
  : undefined

/** Workers of the default run: one per core (SVC_TEST_WORKERS overrides, 1 runs the files one at a time). */
const workers = Number(process.env["SVC_TEST_WORKERS"] ?? availableParallelism())

export default defineConfig({
  test: {
    include: separate ?? ["test/**/*.test.ts"],
    exclude: separate ? [...configDefaults.exclude] : [...configDefaults.exclude, ...CHAOS_TESTS, ...PROCESS_TESTS],
    // On the embedded database: one migrated PGlite directory that each test app starts on a copy of.
    // On PostgreSQL: one migrated template database that each worker gets a copy of.
    globalSetup: ["test/support/global-setup.ts"],
    // Points DATABASE_URL at the worker's own database (PostgreSQL only).
    setupFiles: ["test/support/worker-database.ts"],
    // Files of the default run share nothing (a database per worker, ephemeral ports, temp
    // directories), so they run in parallel; the separate steps run one file at a time.
    fileParallelism: separate === undefined && workers > 1,
    maxWorkers: separate === undefined ? Math.max(1, workers) : 1,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ["default"]
  }
})
