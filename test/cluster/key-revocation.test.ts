/**
 * Key revocation across runners: a key revoked on runner A stops authenticating on runner B
 * (which cached it a moment before) within about ten seconds. Two real service processes in
 * socket mode on a fresh PostgreSQL database.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { eventually } from "../support/eventually.ts"
import { createTestDatabase, type TestDatabase } from "./support/database.ts"
import { type RunnerProcess, RUNNER_ADMIN_TOKEN, startRunner, stopRunner } from "./support/processes.ts"

const adminUrl = process.env["DATABASE_URL"] ?? ""
const TOKEN = `revocation-${randomBytes(12).toString("hex")}`

const runners: Array<RunnerProcess> = []
let database: TestDatabase | undefined

const request = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) })
    const text = await response.text()
    return { status: response.status, json: text.length > 0 && text.startsWith("{") ? JSON.parse(text) : undefined }
  })

const waitHealthy = (runner: RunnerProcess) =>
  eventually(
    Effect.promise(() =>
      fetch(`${runner.baseUrl}/readyz`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.status === 200, () => false)
    ),
    (ok) => ok,
    { what: () => `runner ${runner.name} to become ready\n${runner.tail()}`, within: "90 seconds", every: "250 millis" }
  )

describe.skipIf(adminUrl === "")(
  adminUrl === "" ? "key revocation across runners (skipped: DATABASE_URL is not set)" : "key revocation across runners",
  () => {
    it.live("a key revoked on runner A stops authenticating on runner B within about 10 s", () =>
      Effect.gen(function*() {
        yield* Effect.addFinalizer(() =>
          Effect.promise(async () => {
            await Promise.all(runners.map((runner) => stopRunner(runner)))
            await database?.drop()
          })
        )
        database = yield* Effect.promise(() => createTestDatabase(adminUrl, "svc_revocation_test"))
        const databaseUrl = database.url
        const a = yield* Effect.promise(() => startRunner({ name: "A", databaseUrl, token: TOKEN }))
        runners.push(a)
        yield* waitHealthy(a)
        const b = yield* Effect.promise(() => startRunner({ name: "B", databaseUrl, token: TOKEN }))
        runners.push(b)
        yield* waitHealthy(b)

        // The partner flow on A: register an app, provision a profile, take a key.
        const app = (yield* request(`${a.baseUrl}/api/v1/admin/oauth-apps`, {
          method: "POST",
          headers: { authorization: `Bearer ${RUNNER_ADMIN_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ name: "revocation", redirect_uris: ["https://partner.example/cb"] })
        })).json.data
        const basic = `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString("base64")}`
        const profile = (yield* request(`${a.baseUrl}/api/v1/profiles`, {
          method: "POST",
          headers: { authorization: basic, "content-type": "application/json" },
          body: JSON.stringify({ external_ref: "merchant-1" })
        })).json.data
        const token = (yield* request(`${a.baseUrl}/oauth/token`, {
          method: "POST",
          headers: { authorization: basic, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ grant_type: "client_credentials", profile_id: profile.profile_id }).toString()
        })).json
        const key = { headers: { authorization: `Bearer ${token.access_token}` } }

        // Both runners authenticate (and cache) the key.
        expect((yield* request(`${a.baseUrl}/api/v1/connections`, key)).status).toBe(200)
        expect((yield* request(`${b.baseUrl}/api/v1/connections`, key)).status).toBe(200)

        const revoked = yield* request(`${a.baseUrl}/oauth/revoke`, {
          method: "POST",
          headers: { authorization: basic, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ token: token.access_token }).toString()
        })
        expect(revoked.status).toBe(200)
        const revokedAt = Date.now()
        // The revoking runner drops its cached copy at once.
        expect((yield* request(`${a.baseUrl}/api/v1/connections`, key)).status).toBe(401)
        const { status: statusOnB } = yield* eventually(request(`${b.baseUrl}/api/v1/connections`, key), (answer) => answer.status !== 200, {
          what: "runner B to refuse the revoked key",
          within: "20 seconds",
          every: "200 millis"
        })
        const elapsed = Date.now() - revokedAt
        console.log(`revocation_visible_on_other_runner_ms=${elapsed}`)
        expect(statusOnB).toBe(401)
        expect(elapsed).toBeLessThanOrEqual(10_000)
      }).pipe(Effect.scoped), 180_000)
  }
)
