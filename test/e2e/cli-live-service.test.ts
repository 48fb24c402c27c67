/**
 * The CLI beside a running service on one embedded database (decision 0052): commands go
 * through the service over loopback or refuse in one line; a second process never opens the
 * data directory; the lock goes away with the service.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { tempDir } from "../support/app.ts"
import { repoRoot, startService, stopService, waitUntil } from "../support/service-process.ts"

const cliEntry = fileURLToPath(new URL("../../src/main/cli.ts", import.meta.url))

const run = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const { DATABASE_URL: _ignored, ...inherited } = process.env
    const child = spawn(process.execPath, [cliEntry, ...args], { cwd: repoRoot, env: { ...inherited, ...env } })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })

describe("the CLI and a running embedded service", () => {
  it("works through the service or refuses in one line, and never opens a held data directory", { timeout: 180_000 }, async () => {
    const dataDir = join(tempDir("cli-live"), "db")
    const env = { SVC_DATA_DIR: dataDir, LOG_LEVEL: "Warn" }
    // DATABASE_URL empty: the embedded database even when the suite runs on PostgreSQL.
    const service = await startService({ ...env, DATABASE_URL: "" })
    try {
      await waitUntil(async () => {
        const response = await fetch(`${service.baseUrl}/readyz`).catch(() => undefined)
        return response?.status === 200
      }, 60_000, "the service to be ready")
      await waitUntil(async () => existsSync(join(dataDir, "svc.lock")), 5_000, "the lock file")

      const status = await run(["status"], env)
      expect(status.code, status.stderr).toBe(0)
      const parsed = JSON.parse(status.stdout)
      expect(parsed.served_by.pid).toBe(service.child.pid)
      expect(parsed.database.mode).toBe("embedded")

      const apps = await run(["oauth-apps", "list"], env)
      expect(apps.code, apps.stderr).toBe(0)
      expect(JSON.parse(apps.stdout).data).toBeInstanceOf(Array)

      const quickstart = await run(["quickstart", "--json"], env)
      expect(quickstart.code, quickstart.stderr).toBe(0)
      const bundle = JSON.parse(quickstart.stdout)
      expect(Object.keys(bundle).sort()).toEqual(["api_key", "person_email", "profile_id", "sign_in_url", "tracking_key", "workspace_id"])
      const me = await fetch(`${service.baseUrl}/api/v1/me`, { headers: { authorization: `Bearer ${bundle.api_key}` } })
      expect(me.status).toBe(200)

      const invite = await run(["people", "invite", "--email", "someone@cli.example"], env)
      expect(invite.code, invite.stderr).toBe(0)
      expect(JSON.parse(invite.stdout).data.url).toMatch(/\/account\/password\?token=/)

      const refused = await run(["analytics", "rebuild"], env)
      expect(refused.code).toBe(1)
      expect(refused.stderr.trim().split("\n")).toHaveLength(1)
      expect(refused.stderr).toMatch(/^svc: analytics rebuild needs the embedded database to itself.*stop it first/)

      // A second service on the same directory refuses to open it, and the first keeps serving.
      const second = await startService({ ...env, DATABASE_URL: "" })
      const exit = await second.exited
      expect(exit.code).toBe(1)
      // One line saying why and what to do, no stack.
      expect(second.tail()).toMatch(/^cannot start: the embedded database in .* is open in the service \(pid \d+, port \d+\); stop it first, or use DATABASE_URL/)
      expect(second.tail().split("\n").length).toBe(1)
      expect((await fetch(`${service.baseUrl}/readyz`)).status).toBe(200)
    } finally {
      await stopService(service)
    }
    expect(existsSync(join(dataDir, "svc.lock"))).toBe(false)
    // With the service stopped the CLI opens the database itself.
    const local = await run(["status"], env)
    expect(local.code, local.stderr).toBe(0)
    expect(JSON.parse(local.stdout).migrations.pending).toBe(0)
  })
})
