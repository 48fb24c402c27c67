/**
 * The README's RPC example program, run exactly as written (the fenced `ts rpc-example` block)
 * against the real application with an operator-minted credential.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { makeServiceClient } from "../../src/rpc/client.ts"
import { RpcCredentials } from "../../src/rpc/credentials/service.ts"
import { serveApp, TestServer, testSettings } from "../support/app.ts"
import { defineConversion } from "../support/events.ts"
import { seedProfile } from "../support/tenancy.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

const exampleProgram = () => {
  const readme = readFileSync(join(root, "README.md"), "utf8")
  const match = /```ts rpc-example\n([\s\S]*?)\n```/.exec(readme)
  if (match?.[1] === undefined) throw new Error("README.md has no ```ts rpc-example block")
  return match[1]
}

/** Runs `file` with the repository's Node 24 (it strips the types); answers stdout, or fails with stderr. */
const runNode = (file: string, env: Record<string, string>) =>
  Effect.callback<string, Error>((resume) => {
    execFile(join(root, "node_modules/.bin/node"), [file], { env: { ...process.env, ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resume(error === null ? Effect.succeed(stdout) : Effect.fail(new Error(`${error.message}\n${stderr}`)))
    })
  })

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("README RPC example", (it) => {
  it.effect("the program runs as written: ingest, overview and the feed", () =>
    Effect.gen(function*() {
      const profile = yield* seedProfile()
      yield* defineConversion(profile.profileId, "sale", ["purchase"], { countsAsCash: true })
      const minted = yield* Effect.flatMap(RpcCredentials, (credentials) =>
        credentials.mint({ name: "readme", scopes: ["events:write", "analytics:read", "conversions:read"] })).pipe(
          Effect.provide(RpcCredentials.layer)
        )
      const { url } = yield* TestServer
      // A settled event beforehand, so the feed has something to answer at once.
      const rpc = yield* makeServiceClient({ url, credential: minted.secret })
      const earlier = yield* rpc.EventsIngest({ profile_id: profile.profileId, event: { event_name: "purchase", idempotency_key: "earlier" } })
      const sql = yield* SqlClient
      yield* sql`UPDATE outbox SET created_at = created_at - interval '1 minute' WHERE profile_id = ${profile.profileId}`

      // Inside the repository, so `attribution-service/rpc/client` resolves through package.json `exports`.
      const dir = mkdtempSync(join(root, ".readme-example-"))
      const output = yield* Effect.ensuring(
        Effect.suspend(() => {
          const file = join(dir, "program.ts")
          writeFileSync(file, exampleProgram())
          return runNode(file, { SVC_URL: url, SVC_RPC_CREDENTIAL: minted.secret, PROFILE_ID: profile.profileId })
        }),
        Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      const lines = output.trim().split("\n")
      const recorded = yield* rpc.EventsIngest({
        profile_id: profile.profileId,
        event: {
          event_name: "purchase",
          idempotency_key: "order-1001",
          properties: { value: "49.90", currency: "EUR" },
          user_traits: { external_id: "cust-42" }
        }
      })
      assert.strictEqual(lines[0], `recorded ${recorded.data.outcome_event_id}`)
      assert.match(lines[1] ?? "", /^outcomes in the last 30 days: \d+$/)
      assert.match(lines[2] ?? "", new RegExp(`^feed ${earlier.data.outcome_event_id} \\S+$`))
    }), 90_000)
})
