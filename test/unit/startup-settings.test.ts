/**
 * Safe start-up defaults as configuration (decision 0105), in the default run: where the service
 * runs × SVC_PROVIDERS, the warning, the SVC_SECRETS_KEY refusal, each resolved by `loadSettings`
 * from exactly the given variables; and the embedded data directory opened in this process
 * (PGlite's initdb, the generated key) left 0700/0600. The same through the real entry point, a
 * Node process per start, is test/unit/startup-config.test.ts and test/e2e/startup-defaults.test.ts
 * (`npm run test:process`).
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option, Result } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, rmSync } from "node:fs"
import { join } from "node:path"
import { AppConfig, type AppSettings, InvalidSetting, loadSettings, sandboxWarning } from "../../src/platform/config.ts"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { SecretBox } from "../../src/platform/secret-box.ts"
import { describeConfigError } from "../../src/platform/startup.ts"
import { tempDir } from "../support/app.ts"
import { assertPrivate } from "../support/private-tree.ts"

/** `loadSettings` over exactly `env` (nothing inherited from the test's own environment). */
const settingsFrom = (env: Record<string, string>) =>
  Effect.runSync(Effect.result(loadSettings.pipe(
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord({ SVC_DATA_DIR: "/nonexistent", ...env }))
  )))

const loaded = (env: Record<string, string>): AppSettings => {
  const result = settingsFrom(env)
  if (Result.isFailure(result)) throw new Error(describeConfigError(result.failure))
  return result.success
}

const KEY = randomBytes(32).toString("base64")
/** Never connected to: resolving settings opens nothing. */
const UNREACHABLE_DATABASE = "postgres://postgres@127.0.0.1:1/none"

describe("start-up defaults: where the service runs × SVC_PROVIDERS (decision 0105)", () => {
  const places: ReadonlyArray<[string, Record<string, string>, boolean]> = [
    ["embedded", {}, false],
    ["DATABASE_URL", { DATABASE_URL: UNREACHABLE_DATABASE }, true],
    ["NODE_ENV=production", { NODE_ENV: "production" }, true],
    // Any other NODE_ENV is not production.
    ["NODE_ENV=development", { NODE_ENV: "development" }, false]
  ]
  for (const [place, env, productionShaped] of places) {
    for (const chosen of [undefined, "sandbox", "live"] as const) {
      const expected = chosen ?? (productionShaped ? "live" : "sandbox")
      const warned = productionShaped && expected === "sandbox"
      it(`${place}, SVC_PROVIDERS ${chosen ?? "unset"}: ${expected}${warned ? ", with the warning" : ""}`, () => {
        const settings = loaded({ ...env, SVC_SECRETS_KEY: KEY, ...(chosen === undefined ? {} : { SVC_PROVIDERS: chosen }) })
        assert.strictEqual(settings.productionShaped, productionShaped)
        assert.strictEqual(settings.providers.mode, expected)
        assert.strictEqual(settings.providers.servesSandbox, expected === "sandbox")
        const warning = sandboxWarning(settings)
        assert.strictEqual(Option.isSome(warning), warned)
        if (Option.isSome(warning)) {
          assert.notInclude(warning.value, "\n")
          assert.match(warning.value, /^SVC_PROVIDERS=sandbox on a production-shaped start .*under \/sandbox.*must not face real users$/)
        }
      })
    }
  }

  it("an explicit sandbox served by `npm run sandbox` names where it answers", () => {
    const settings = loaded({ NODE_ENV: "production", SVC_SECRETS_KEY: KEY, SVC_PROVIDERS: "sandbox", SVC_SANDBOX_URL: "http://sandbox.internal:8090/sandbox" })
    assert.isFalse(settings.providers.servesSandbox)
    assert.include(Option.getOrThrow(sandboxWarning(settings)), "at http://sandbox.internal:8090/sandbox")
  })

  it("an empty SVC_PROVIDERS is unset, and any other value names the variable", () => {
    assert.strictEqual(loaded({ NODE_ENV: "production", SVC_SECRETS_KEY: KEY, SVC_PROVIDERS: "" }).providers.mode, "live")
    const bad = settingsFrom({ SVC_PROVIDERS: "fake" })
    assert.isTrue(Result.isFailure(bad))
    if (Result.isFailure(bad)) assert.match(describeConfigError(bad.failure), /^invalid configuration: SVC_PROVIDERS: /)
  })
})

describe("SVC_SECRETS_KEY on a production-shaped start (decision 0105)", () => {
  const refusals: ReadonlyArray<[string, Record<string, string>, string]> = [
    ["DATABASE_URL", { DATABASE_URL: UNREACHABLE_DATABASE }, "required when DATABASE_URL is set"],
    ["NODE_ENV=production", { NODE_ENV: "production" }, "required when NODE_ENV=production"],
    // Whatever providers are asked for.
    ["DATABASE_URL, sandbox", { DATABASE_URL: UNREACHABLE_DATABASE, SVC_PROVIDERS: "sandbox" }, "required when DATABASE_URL is set"],
    ["NODE_ENV=production, sandbox", { NODE_ENV: "production", SVC_PROVIDERS: "sandbox" }, "required when NODE_ENV=production"]
  ]
  for (const [place, env, why] of refusals) {
    it(`missing with ${place}: refused, naming the variable and how to make one`, () => {
      const result = settingsFrom(env)
      assert.isTrue(Result.isFailure(result))
      if (Result.isFailure(result)) {
        assert.instanceOf(result.failure, InvalidSetting)
        const line = describeConfigError(result.failure)
        assert.notInclude(line, "\n")
        assert.match(line, /^invalid configuration: SVC_SECRETS_KEY: /)
        assert.include(line, why)
        assert.include(line, "openssl rand -base64 32")
      }
    })
  }

  it("the embedded database outside production still starts without one (generated into the data directory)", () => {
    assert.isTrue(Option.isNone(loaded({}).secretsKey))
    assert.isTrue(Option.isNone(loaded({ NODE_ENV: "test" }).secretsKey))
  })
})

/**
 * Opens the embedded database and the secrets box as a start does, from the settings of a start
 * without SVC_SECRETS_KEY (so the key is generated into the directory), runs one statement and
 * closes them (PGlite's checkpoint on the way out included).
 */
const openEmbedded = (dataDir: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    assert.deepStrictEqual(yield* sql<{ one: number }>`SELECT 1 AS one`, [{ one: 1 }])
    yield* SecretBox
  }).pipe(
    Effect.provide(Layer.mergeAll(DatabaseLayer, SecretBox.layer).pipe(
      Layer.provide(AppConfig.layerWith(loaded({ SVC_DATA_DIR: dataDir })))
    ))
  )

describe("SVC_WORKERS (decision 0139)", () => {
  it("on unless set; off with a shared database; refused off on the embedded database; any other value names the variable", () => {
    assert.strictEqual(loaded({}).workers, true)
    assert.strictEqual(loaded({ SVC_WORKERS: "on" }).workers, true)
    assert.strictEqual(loaded({ SVC_WORKERS: "off", DATABASE_URL: UNREACHABLE_DATABASE, SVC_SECRETS_KEY: KEY }).workers, false)
    const embedded = settingsFrom({ SVC_WORKERS: "off" })
    assert.ok(Result.isFailure(embedded))
    assert.match(Result.isFailure(embedded) ? describeConfigError(embedded.failure) : "", /^invalid configuration: SVC_WORKERS: off needs DATABASE_URL/)
    const other = settingsFrom({ SVC_WORKERS: "sometimes" })
    assert.ok(Result.isFailure(other))
    assert.include(Result.isFailure(other) ? describeConfigError(other.failure) : "", "SVC_WORKERS")
  })
})

describe("the embedded database's data directory is the service user's alone (decision 0105)", () => {
  it.live("a fresh directory: 0700, and every file 0600 (PGlite's initdb, the generated key); one left open is tightened at the next open", () =>
    Effect.gen(function*() {
      const parent = tempDir("private-data")
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(parent, { recursive: true, force: true })))
      // Not there yet: created by the start, parents included.
      const dataDir = join(parent, "nested", "db")
      yield* openEmbedded(dataDir)
      assert.isTrue(existsSync(join(dataDir, "secrets.key")))
      assert.isTrue(existsSync(join(dataDir, "PG_VERSION")))
      assertPrivate(dataDir)

      // As an older version (initdb's own modes) or an operator left it.
      chmodSync(dataDir, 0o755)
      chmodSync(join(dataDir, "base"), 0o755)
      chmodSync(join(dataDir, "PG_VERSION"), 0o666)
      chmodSync(join(dataDir, "secrets.key"), 0o644)
      yield* openEmbedded(dataDir)
      assertPrivate(dataDir)
    }).pipe(Effect.scoped), { timeout: 60_000 })
})
