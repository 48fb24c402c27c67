/**
 * Issue 29 items 2-4 (decision 0109): the sandbox providers are closed to strangers. Every test
 * control answers 401 to an anonymous caller and opens only with the profile's own API key or
 * the operator token naming the world; each profile has its own world (arrivals and faults reach
 * no other tenant); pushes go only to this service's own `/hooks/<provider>` (or an origin the
 * operator opened), never follow a redirect; `_state` shows no secret; test media is capped. The
 * controls are checked again on an app configured as a production start that asks for the sandbox.
 */
import { assert, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { createServer } from "node:http"
import { PROVIDER_KINDS } from "../../src/connections/providers/registry.ts"
import { signCallback } from "../../src/connections/providers/signing.ts"
import { loadSettings } from "../../src/platform/config.ts"
import { call, migratedDataDir, OPERATOR_TOKEN, serveApp, TEST_SECRETS_KEY, tempDir, TestServer } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { connectProvider, freePort, ownPortSettings, sandboxSecretOf, sandboxToken } from "../support/providers.ts"
import { worldHandle } from "../support/sandbox-world.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write"]

/** The app on its own port, with one extra push origin opened by the operator: `http://localhost` (any port). */
const App = Layer.unwrap(Effect.map(freePort, (port) => {
  const settings = ownPortSettings(port)
  return serveApp({ ...settings, providers: { ...settings.providers, sandboxCallbackOrigins: ["http://localhost"] } })
}))

const tenant = Effect.gen(function*() {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 5000 })
  return { ...profile, key }
})

/** Every test control route, each with a body that would change the world if it were let in. */
const CONTROL_ROUTES: ReadonlyArray<readonly [string, string, unknown]> = [
  ["GET", "_state", undefined],
  ["PATCH", "_state", { arrive: { kind: "message", from: "351930000009", text: "hi" } }],
  ["PATCH", "_state", { objects: [] }],
  ["POST", "_faults", { revoke_tokens: true, throttle: 5 }]
]

const control = (method: string, path: string, auth: string | undefined, body?: unknown) =>
  call(path, {
    method,
    headers: {
      ...(auth === undefined ? {} : { authorization: `Bearer ${auth}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const outboxCount = (profileId: string, topic: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox WHERE profile_id = ${profileId} AND topic = ${topic}`,
      (rows) => rows[0]?.n ?? 0
    ))

/** A server that answers every request with `answer` and records the paths it was asked for. */
const recorder = (answer: (port: number) => { status: number; headers?: Record<string, string> }) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly port: number; readonly hits: Array<string>; readonly close: () => void }>((resume) => {
      const hits: Array<string> = []
      let port = 0
      const server = createServer((request, response) => {
        hits.push(request.url ?? "")
        request.resume()
        const { status, headers } = answer(port)
        response.writeHead(status, headers ?? {}).end()
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ port, hits, close: () => server.close() }))
      })
    }),
    (server) => Effect.sync(server.close)
  )

layer(App, { timeout: "120 seconds", excludeTestServices: true })("sandbox security", (it) => {
  it.effect("every test control of every provider: anonymous 401, a stranger's key 401, another tenant's 403, the operator without a world 400; nothing changes", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const b = yield* tenant
      for (const provider of PROVIDER_KINDS) {
        const before = yield* control("GET", `/sandbox/${provider}/_state`, b.key)
        assert.strictEqual(before.status, 200, `${provider}: ${before.text}`)
        for (const [method, route, body] of CONTROL_ROUTES) {
          const path = `/sandbox/${provider}/${route}`
          const anonymous = yield* control(method, path, undefined, body)
          assert.strictEqual(anonymous.status, 401, `${method} ${path}: ${anonymous.text}`)
          assert.strictEqual(anonymous.json.error.code, "unauthorized")
          assert.include(anonymous.headers.get("www-authenticate") ?? "", "Bearer")
          const stranger = yield* control(method, path, "svc_live_not-a-key", body)
          assert.strictEqual(stranger.status, 401, stranger.text)
          const wrong = yield* control(method, `${path}?profile_id=${b.profileId}`, a.key, body)
          assert.strictEqual(wrong.status, 403, wrong.text)
          assert.strictEqual(wrong.json.error.code, "forbidden")
          const worldless = yield* control(method, path, OPERATOR_TOKEN, body)
          assert.strictEqual(worldless.status, 400, worldless.text)
          assert.strictEqual(worldless.json.error.code, "invalid_parameter")
        }
        // B's world is as it was: no fault set, no write, no delivery.
        const after = yield* control("GET", `/sandbox/${provider}/_state?profile_id=${b.profileId}`, OPERATOR_TOKEN)
        assert.strictEqual(after.status, 200, after.text)
        assert.deepStrictEqual(after.json.faults, before.json.faults)
        assert.strictEqual(after.json.write_count, before.json.write_count)
        assert.deepStrictEqual(after.json.deliveries, [])
        // No secret in `_state`: the app shows its client id only.
        assert.notInclude(after.text, sandboxSecretOf(provider))
        assert.deepStrictEqual(Object.keys(after.json.app), ["client_id"])
      }
    }))

  it.effect("one tenant's arrivals and faults stay in its world: a lead reaches A only, A's revocation leaves B connected", () =>
    Effect.gen(function*() {
      const a = yield* tenant
      const b = yield* tenant
      yield* connectProvider(a.key, "adplatform")
      yield* connectProvider(b.key, "adplatform")
      const arrived = yield* control("PATCH", "/sandbox/adplatform/_state", a.key, { arrive: { kind: "lead", ad_id: "ad_1001_3_1_1" } })
      assert.isTrue(arrived.status === 200 || arrived.status === 201, arrived.text)
      yield* eventually(outboxCount(a.profileId, "leadgen.received"), (n) => n === 1, { what: "A's leadgen.received", within: "10 seconds" })
      assert.strictEqual(yield* outboxCount(b.profileId, "leadgen.received"), 0)
      // The same seeded ids exist in B's world, untouched by A's arrival.
      const bState = yield* control("GET", "/sandbox/adplatform/_state", b.key)
      assert.deepStrictEqual(bState.json.deliveries, [])

      const revoked = yield* control("POST", "/sandbox/adplatform/_faults", a.key, { revoke_tokens: true })
      assert.strictEqual(revoked.status, 200, revoked.text)
      const statusOf = (key: string) =>
        Effect.map(call("/api/v1/connections", { headers: { authorization: `Bearer ${key}` } }), (r) =>
          (r.json.data as ReadonlyArray<{ provider: string; status: string }>).find((c) => c.provider === "adplatform")?.status)
      yield* eventually(statusOf(a.key), (status) => status === "reconnect_required", { what: "A reconnect_required", within: "10 seconds" })
      assert.notStrictEqual(yield* statusOf(b.key), "reconnect_required")
      const bGrants = (yield* control("GET", "/sandbox/adplatform/_state", b.key)).json.grants as ReadonlyArray<{ revoked: boolean }>
      assert.isTrue(bGrants.length > 0 && bGrants.every((grant) => !grant.revoked))
    }))

  it.effect("pushes: only the service's own /hooks/<provider> or an opened origin; never a loopback port, never a redirect followed", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const a = yield* tenant
      const target = yield* recorder(() => ({ status: 204 }))
      const bouncer = yield* recorder(() => ({ status: 302, headers: { location: `http://localhost:${target.port}/landed` } }))
      const token = (yield* sandboxToken(url, "adplatform", "one_account", a.profileId)).access_token
      const subscribe = (callbackUrl: string) =>
        call("/sandbox/adplatform/v1/accounts/act_1001/subscriptions", {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ callback_url: callbackUrl })
        })
      for (const refused of [`http://127.0.0.1:${target.port}/x`, `${url}/hooks/crm`, `${url}/api/v1/events`, "http://169.254.169.254/latest"]) {
        const answer = yield* subscribe(refused)
        assert.strictEqual(answer.status, 400, `${refused}: ${answer.text}`)
        assert.strictEqual(answer.json.error.code, "invalid_parameter")
      }
      assert.strictEqual((yield* subscribe(`http://localhost:${bouncer.port}/r`)).status, 200)
      const arrived = yield* control("PATCH", "/sandbox/adplatform/_state", a.key, { arrive: { kind: "lead", ad_id: "ad_1001_3_1_1" } })
      const deliveries = arrived.json.deliveries as ReadonlyArray<{ callback_url: string; status: number | null }>
      assert.deepStrictEqual(deliveries.map((d) => [d.callback_url, d.status]), [[`http://localhost:${bouncer.port}/r`, 302]])
      assert.deepStrictEqual(bouncer.hits, ["/r"])
      assert.deepStrictEqual(target.hits, [])
      const state = yield* control("GET", "/sandbox/adplatform/_state", a.key)
      assert.deepStrictEqual(
        (state.json.subscriptions as ReadonlyArray<{ callback_url: string }>).map((s) => s.callback_url),
        [`http://localhost:${bouncer.port}/r`]
      )
    }))

  it.effect("/hooks/<provider> in sandbox mode takes a push only with a valid world; consent links need one too", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const a = yield* tenant
      const body = JSON.stringify({ event: "grant_revoked", account_id: "crm_portal_1001", user_id: "u", time: 1 })
      const post = (world: string | undefined) =>
        call("/hooks/crm", {
          method: "POST",
          headers: {
            ...signCallback("crm", sandboxSecretOf("crm"), body),
            "content-type": "application/json",
            ...(world === undefined ? {} : { "x-sandbox-world": world })
          },
          body
        })
      for (const world of [undefined, `${a.profileId}.${"0".repeat(32)}`, worldHandle(a.profileId).slice(0, -1)]) {
        const refused = yield* post(world)
        assert.strictEqual(refused.status, 401, refused.text)
        assert.strictEqual(refused.json.error.code, "unauthorized")
      }
      assert.strictEqual((yield* post(worldHandle(a.profileId))).status, 200)

      const authorize = new URL(`${url}/sandbox/adplatform/oauth/authorize`)
      authorize.searchParams.set("client_id", "sandbox-adplatform")
      authorize.searchParams.set("redirect_uri", "https://app.example/callback")
      authorize.searchParams.set("state", "s")
      const bare = yield* call(authorize.pathname + authorize.search)
      assert.strictEqual(bare.status, 400)
      authorize.searchParams.set("sandbox_world", `${a.profileId}.${"f".repeat(32)}`)
      const forged = yield* call(authorize.pathname + authorize.search)
      assert.strictEqual(forged.status, 400)
      assert.notInclude(forged.text, `name="persona"`)
    }))

  it.effect("test media answers up to the spec's limits, one byte over at most", () =>
    Effect.gen(function*() {
      const MB = 1024 * 1024
      const cases: ReadonlyArray<readonly [string, number, number]> = [
        ["a.jpg", 5 * MB + 1, 200],
        ["a.jpg", 5 * MB + 2, 400],
        ["a.png", 5 * MB + 2, 400],
        ["a.mp4", 16 * MB + 2, 400],
        ["a.pdf", 115_343_360, 400],
        ["a.txt", 70_000, 400]
      ]
      for (const [file, bytes, status] of cases) {
        const answer = yield* call(`/sandbox/chat_app_a/media/${file}?bytes=${bytes}`)
        assert.strictEqual(answer.status, status, `${file} ${bytes}`)
      }
    }))
})

/**
 * The settings a production start resolves (decision 0105): NODE_ENV=production with the sandbox
 * asked for explicitly, from exactly these variables; only the listening port is the harness's.
 */
const productionSettings = Effect.runSync(loadSettings.pipe(
  Effect.provideService(
    ConfigProvider.ConfigProvider,
    ConfigProvider.fromEnvRecord({
      NODE_ENV: "production",
      SVC_PROVIDERS: "sandbox",
      SVC_SECRETS_KEY: TEST_SECRETS_KEY,
      SVC_ADMIN_TOKEN: OPERATOR_TOKEN,
      SVC_SHARDS_PER_GROUP: "30",
      LOG_LEVEL: "Error",
      ...(process.env["DATABASE_URL"]
        ? { DATABASE_URL: process.env["DATABASE_URL"], SVC_DATA_DIR: tempDir("data") }
        : { SVC_DATA_DIR: migratedDataDir() })
    })
  )
))

layer(serveApp({ ...productionSettings, port: 0 }), { timeout: "120 seconds", excludeTestServices: true })(
  "sandbox security on a production-shaped start",
  (it) => {
    it.effect("NODE_ENV=production, SVC_PROVIDERS=sandbox: every test control answers an anonymous caller 401 and the operator without a world 400; nothing changes", () =>
      Effect.gen(function*() {
        assert.isTrue(productionSettings.productionShaped)
        assert.strictEqual(productionSettings.providers.mode, "sandbox")
        assert.isTrue(productionSettings.providers.servesSandbox)
        const a = yield* tenant
        for (const provider of PROVIDER_KINDS) {
          const stateOf = Effect.gen(function*() {
            const read = yield* control("GET", `/sandbox/${provider}/_state`, a.key)
            assert.strictEqual(read.status, 200, `${provider}: ${read.text}`)
            return read.json
          })
          const before = yield* stateOf
          for (const [method, route, body] of CONTROL_ROUTES) {
            const path = `/sandbox/${provider}/${route}`
            // Naming the world opens nothing without a credential.
            for (const target of [path, `${path}?profile_id=${a.profileId}`]) {
              const anonymous = yield* control(method, target, undefined, body)
              assert.strictEqual(anonymous.status, 401, `${method} ${target}: ${anonymous.text.slice(0, 300)}`)
              assert.deepStrictEqual(Object.keys(anonymous.json), ["error"])
              assert.deepStrictEqual(Object.keys(anonymous.json.error).sort(), ["code", "message"])
              assert.strictEqual(anonymous.json.error.code, "unauthorized")
              assert.isString(anonymous.json.error.message)
              assert.strictEqual(anonymous.headers.get("www-authenticate"), `Bearer realm="sandbox"`)
            }
            const worldless = yield* control(method, path, OPERATOR_TOKEN, body)
            assert.strictEqual(worldless.status, 400, `${method} ${path}: ${worldless.text.slice(0, 300)}`)
            assert.deepStrictEqual(Object.keys(worldless.json), ["error"])
            assert.strictEqual(worldless.json.error.code, "invalid_parameter")
            assert.include(worldless.json.error.message, "profile_id")
          }
          // The world is as it was, read with its own key and with the operator naming it.
          assert.deepStrictEqual(yield* stateOf, before, provider)
          const operator = yield* control("GET", `/sandbox/${provider}/_state?profile_id=${a.profileId}`, OPERATOR_TOKEN)
          assert.strictEqual(operator.status, 200, operator.text)
          assert.deepStrictEqual(operator.json, before, provider)
        }
      }))
  }
)
