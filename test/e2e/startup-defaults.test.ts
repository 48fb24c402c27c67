/**
 * Safe start-up defaults through the real entry point (decision 0105): which providers a start
 * gets, the one warning for simulated providers asked for on a production-shaped start, whether
 * `/sandbox/` is served, and the embedded data directory being the service user's alone (0700
 * directories, 0600 files, PGlite's and the generated key's included). The whole matrix, as a
 * function, and the data directory opened in-process are in test/unit/startup-settings.test.ts
 * (the default run); these are the process starts.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { chmodSync, existsSync, rmSync } from "node:fs"
import { join } from "node:path"
import { Agent } from "node:http"
import { randomBytes } from "node:crypto"
import { tempDir } from "../support/app.ts"
import { assertPrivate } from "../support/private-tree.ts"
import { send, type ServiceProcess, startService, stopService, waitUntil } from "../support/service-process.ts"

const WARNING = "SVC_PROVIDERS=sandbox on a production-shaped start"
const databaseUrl = process.env["DATABASE_URL"]

/** Nothing the start-up rules read is inherited from the test run's environment unless given here. */
const clean = { DATABASE_URL: "", NODE_ENV: "", SVC_PROVIDERS: "", SVC_SECRETS_KEY: "", SVC_SANDBOX_URL: "", LOG_LEVEL: "Warn" }

const ready = async (service: ServiceProcess) => {
  await waitUntil(async () => {
    if (service.child.exitCode !== null) throw new Error(`the service exited ${service.child.exitCode}:\n${service.tail()}`)
    const outcome = await send(new Agent({ keepAlive: false }), `${service.baseUrl}/readyz`, { timeoutMs: 2_000 })
    return outcome.kind === "answered" && outcome.status === 200
  }, 150_000, "/readyz 200")
}

const statusOf = async (service: ServiceProcess, path: string) => {
  const outcome = await send(new Agent({ keepAlive: false }), `${service.baseUrl}${path}`)
  if (outcome.kind !== "answered") throw new Error(`${path}: ${outcome.kind} ${outcome.code}`)
  return outcome
}

const warnings = (service: ServiceProcess) => service.output().filter((line) => line.includes(WARNING))

/** Starts the service with `env`, runs `check` once it is ready, and stops it: it must exit 0. */
const whileServed = async (env: Record<string, string>, check: (service: ServiceProcess) => Promise<void> | void) => {
  const service = await startService(env)
  try {
    await ready(service)
    await check(service)
  } finally {
    assert.strictEqual((await stopService(service)).code, 0, service.tail())
  }
}

/** `/sandbox/` is not served (the normal 404 envelope) and nothing warned about it. */
const assertSandboxNotServed = async (service: ServiceProcess) => {
  const state = await statusOf(service, "/sandbox/adplatform/_state")
  assert.strictEqual(state.status, 404)
  assert.strictEqual(JSON.parse(state.body).error.code, "not_found")
  assert.deepStrictEqual(warnings(service), [])
}

describe("the embedded database's data directory and the providers a start gets", () => {
  const parent = tempDir("startup-defaults")
  const dataDir = join(parent, "db")
  afterAll(() => rmSync(parent, { recursive: true, force: true }))

  it("a fresh embedded start: the sandbox by default, no warning, directory 0700 and every file 0600 (PGlite's, the key's)", { timeout: 240_000 }, async () => {
    await whileServed({ ...clean, SVC_DATA_DIR: dataDir }, async (service) => {
      // Served here (the status an anonymous caller gets is the sandbox's own business).
      assert.notStrictEqual((await statusOf(service, "/sandbox/adplatform/_state")).status, 404)
      assert.deepStrictEqual(warnings(service), [])
      assert.isTrue(existsSync(join(dataDir, "secrets.key")))
      assert.isTrue(existsSync(join(dataDir, "PG_VERSION")))
      assertPrivate(dataDir)
    })
    // What was written on the way out (a checkpoint) too.
    assertPrivate(dataDir)
  })

  it("NODE_ENV=production: live by default, /sandbox/ not served, no warning; a directory left open is tightened at start", { timeout: 180_000 }, async () => {
    chmodSync(dataDir, 0o755)
    chmodSync(join(dataDir, "base"), 0o755)
    chmodSync(join(dataDir, "PG_VERSION"), 0o666)
    chmodSync(join(dataDir, "secrets.key"), 0o644)
    await whileServed({ ...clean, SVC_DATA_DIR: dataDir, NODE_ENV: "production", SVC_SECRETS_KEY: randomBytes(32).toString("base64") }, async (service) => {
      await assertSandboxNotServed(service)
      assertPrivate(dataDir)
    })
  })

  it("NODE_ENV=production with SVC_PROVIDERS=sandbox: served, and said once as a warning", { timeout: 180_000 }, async () => {
    await whileServed({
      ...clean,
      SVC_DATA_DIR: dataDir,
      NODE_ENV: "production",
      SVC_PROVIDERS: "sandbox",
      SVC_SECRETS_KEY: randomBytes(32).toString("base64")
    }, async (service) => {
      assert.notStrictEqual((await statusOf(service, "/sandbox/adplatform/_state")).status, 404)
      const said = warnings(service)
      assert.strictEqual(said.length, 1, service.output().join("\n"))
      const line = JSON.parse(said[0] ?? "{}")
      assert.strictEqual(line.level, "WARN")
      assert.match(line.message, /under \/sandbox on this service; they must not face real users$/)
    })
  })
})

describe.skipIf(databaseUrl === undefined || databaseUrl === "")("on DATABASE_URL", () => {
  const key = randomBytes(32).toString("base64")

  it("SVC_PROVIDERS unset: live, /sandbox/ answers 404, no warning", { timeout: 120_000 }, async () => {
    await whileServed({ ...clean, DATABASE_URL: databaseUrl ?? "", SVC_SECRETS_KEY: key }, async (service) => {
      await assertSandboxNotServed(service)
    })
  })

  it("SVC_PROVIDERS=sandbox: served, and said once as a warning", { timeout: 120_000 }, async () => {
    await whileServed({ ...clean, DATABASE_URL: databaseUrl ?? "", SVC_SECRETS_KEY: key, SVC_PROVIDERS: "sandbox" }, async (service) => {
      assert.notStrictEqual((await statusOf(service, "/sandbox/adplatform/_state")).status, 404)
      assert.strictEqual(warnings(service).length, 1, service.output().join("\n"))
    })
  })
})
