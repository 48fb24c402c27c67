/**
 * Start-up and the CLI through their entry points, a Node process per case (`npm run test:process`):
 * invalid configuration stops a start with one line, the SVC_SECRETS_KEY refusal exits 1, the CLI
 * migrates and registers apps. The configuration rules themselves, resolved in-process, are
 * test/unit/startup-settings.test.ts in the default run.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { latestMigrationId, migrations } from "../../migrations/index.ts"
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
    ["SVC_WORKERS", { SVC_WORKERS: "off" }],
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

/** Fails before any connection is tried: nothing listens there. */
const UNREACHABLE_DATABASE = "postgres://postgres@127.0.0.1:1/none"

// The same refusal as configuration, with the whole start-up matrix, is test/unit/startup-settings.test.ts (the default run).
describe("SVC_SECRETS_KEY on a production-shaped start (decision 0105): the process", () => {
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

  it("partitions prepare refuses the embedded database and a table not kept in months, in one line each", () => {
    const embedded = run(cli, {}, ["partitions", "prepare", "touches"])
    assert.strictEqual(embedded.status, 1)
    assert.strictEqual(embedded.stderr, "svc: partitions prepare: the embedded database converts its tables when the service starts; there is nothing to prepare")
    const unknown = run(cli, { DATABASE_URL: "postgres://postgres@127.0.0.1:5432/none", SVC_SECRETS_KEY: "A".repeat(43) + "=" }, ["partitions", "prepare", "customers"])
    assert.strictEqual(unknown.status, 1)
    assert.match(unknown.stderr, /^svc: partitions prepare: customers is not kept in monthly partitions \(.*touches.*\)$/)
  }, 60_000)

  it("partitions split runs on the embedded database (a new install: nothing in legacy) and refuses a table not kept in months", () => {
    const dataDir = tempDir("cli-split")
    const split = run(cli, { SVC_DATA_DIR: dataDir }, ["partitions", "split", "touches"])
    assert.strictEqual(split.status, 0, split.stderr)
    assert.deepStrictEqual(JSON.parse(split.stdout), { table: "touches", split: false, reason: "the legacy partition is empty" })
    const unknown = run(cli, { SVC_DATA_DIR: dataDir }, ["partitions", "split", "customers"])
    assert.strictEqual(unknown.status, 1)
    assert.match(unknown.stderr, /^svc: partitions split: customers is not kept in monthly partitions \(.*touches.*\)$/)
  }, 120_000)

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
