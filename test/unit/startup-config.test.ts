import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Option, Result } from "effect"
import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { fileURLToPath } from "node:url"
import { latestMigrationId, migrations } from "../../migrations/index.ts"
import { type AppSettings, InvalidSetting, loadSettings, sandboxWarning } from "../../src/platform/config.ts"
import { describeConfigError } from "../../src/platform/startup.ts"
import { tempDir } from "../support/app.ts"

const entry = fileURLToPath(new URL("../../src/main/node.ts", import.meta.url))
const cli = fileURLToPath(new URL("../../src/main/cli.ts", import.meta.url))

/** Runs an entry point with only the given variables (plus PATH) and returns its exit and stderr. */
const run = (script: string, env: Record<string, string>, args: ReadonlyArray<string> = []) => {
  const result = spawnSync(process.execPath, [script, ...args], {
    env: { PATH: process.env["PATH"] ?? "", SVC_DATA_DIR: tempDir("cfg"), ...env },
    encoding: "utf8",
    // A fresh embedded database (initdb and every migration) can take tens of seconds on a busy machine.
    timeout: 60_000
  })
  return { status: result.status, stderr: result.stderr.trim(), stdout: result.stdout.trim() }
}

describe("invalid configuration stops start-up with one line naming the variable", () => {
  const cases: ReadonlyArray<[string, Record<string, string>]> = [
    ["PORT", { PORT: "not-a-port" }],
    ["DATABASE_URL", { DATABASE_URL: "mysql://localhost/db" }],
    ["SVC_BASE_URL", { SVC_BASE_URL: "not a url" }],
    ["SVC_CLUSTER_MODE", { SVC_CLUSTER_MODE: "socket" }],
    ["LOG_LEVEL", { LOG_LEVEL: "loud" }],
    ["SVC_MAX_BODY_BYTES", { SVC_MAX_BODY_BYTES: "10" }]
  ]
  for (const [variable, env] of cases) {
    it(variable, () => {
      const result = run(entry, env)
      assert.strictEqual(result.status, 1)
      const lines = result.stderr.split("\n")
      assert.strictEqual(lines.length, 1, result.stderr)
      assert.match(lines[0] ?? "", new RegExp(`^invalid configuration: ${variable}: \\S`))
    }, 30_000)
  }
})

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
/** Fails before any connection is tried: nothing listens there. */
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
    ["DATABASE_URL, sandbox", { DATABASE_URL: UNREACHABLE_DATABASE, SVC_PROVIDERS: "sandbox" }, "required when DATABASE_URL is set"]
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

  for (const [place, env] of [["DATABASE_URL", { DATABASE_URL: UNREACHABLE_DATABASE }], ["NODE_ENV=production", { NODE_ENV: "production" }]] as const) {
    it(`the process exits 1 with the one line (${place})`, () => {
      const result = run(entry, env)
      assert.strictEqual(result.status, 1, result.stderr)
      assert.strictEqual(result.stdout, "")
      const lines = result.stderr.split("\n")
      assert.strictEqual(lines.length, 1, result.stderr)
      assert.match(lines[0] ?? "", /^invalid configuration: SVC_SECRETS_KEY: required when .*openssl rand -base64 32/)
    }, 30_000)
  }
})

describe("CLI", () => {
  it("migrate applies the migrations alone, status reports them", () => {
    const dataDir = tempDir("cli")
    const before = run(cli, { SVC_DATA_DIR: dataDir }, ["status"])
    assert.strictEqual(before.status, 0, before.stderr)
    assert.deepInclude(JSON.parse(before.stdout), { migrations: { applied: 0, latest: latestMigrationId, pending: latestMigrationId } })
    const migrated = run(cli, { SVC_DATA_DIR: dataDir }, ["migrate"])
    assert.strictEqual(migrated.status, 0, migrated.stderr)
    assert.deepStrictEqual(JSON.parse(migrated.stdout), { applied: Object.keys(migrations), latest: latestMigrationId })
    const again = run(cli, { SVC_DATA_DIR: dataDir }, ["migrate"])
    assert.deepStrictEqual(JSON.parse(again.stdout), { applied: [], latest: latestMigrationId })
    const after = run(cli, { SVC_DATA_DIR: dataDir }, ["status"])
    assert.deepInclude(JSON.parse(after.stdout), { migrations: { applied: latestMigrationId, latest: latestMigrationId, pending: 0 } })
  }, 180_000)

  it("oauth-apps create registers an app and prints its secrets once; list never shows them", () => {
    const dataDir = tempDir("cli-apps")
    const created = run(cli, { SVC_DATA_DIR: dataDir }, [
      "oauth-apps", "create", "--name", "CLI App", "--redirect-uri", "https://cli.example/cb", "--rate-tier", "elevated"
    ])
    assert.strictEqual(created.status, 0, created.stderr)
    const app = JSON.parse(created.stdout).data
    assert.strictEqual(app.name, "CLI App")
    assert.strictEqual(app.rate_tier, "elevated")
    assert.match(app.client_secret, /^svc_secret_/)
    assert.isString(app.jwt_secret)
    const listed = run(cli, { SVC_DATA_DIR: dataDir }, ["oauth-apps", "list"])
    assert.strictEqual(listed.status, 0, listed.stderr)
    assert.deepStrictEqual(JSON.parse(listed.stdout).data.map((row: { id: string }) => row.id), [app.id])
    assert.notInclude(listed.stdout, app.client_secret)
    const refused = run(cli, { SVC_DATA_DIR: dataDir }, ["oauth-apps", "create", "--name", "Bad", "--redirect-uri", "http://bad.example/cb"])
    assert.strictEqual(refused.status, 1)
    assert.include(refused.stdout + refused.stderr, "Expected https")
  }, 120_000)
})
