import { configDefaults, defineConfig } from "vitest/config"

/**
 * Multi-process cluster and chaos tests (several service processes, SIGKILL fail-over): not in the
 * default run (kept under ~10 minutes), run by `npm run test:chaos` (needs DATABASE_URL, like
 * these files themselves). The behaviour each checks across processes has an in-process test in
 * the default run (README, Tests).
 */
export const CHAOS_TESTS = [
  "test/cluster/two-runners.test.ts",
  "test/cluster/tracing.test.ts",
  "test/cluster/key-revocation.test.ts"
]

const chaos = process.env["SVC_TEST_CHAOS"] === "1"

export default defineConfig({
  test: {
    include: chaos ? CHAOS_TESTS : ["test/**/*.test.ts"],
    exclude: chaos ? [...configDefaults.exclude] : [...configDefaults.exclude, ...CHAOS_TESTS],
    // On the embedded database: one migrated PGlite directory that each test app starts on a copy of.
    globalSetup: ["test/support/global-setup.ts"],
    // API and cluster tests share one Postgres database per run; files run one at a time
    // so that the two-runner tests and the outage test do not fight over it.
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ["default"]
  }
})
