import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
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
