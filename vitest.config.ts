import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // API and cluster tests share one Postgres database per run; files run one at a time
    // so that the two-runner tests and the outage test do not fight over it.
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ["default"]
  }
})
