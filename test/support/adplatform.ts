/**
 * The sandbox ad platform for ad-write tests (recommendation apply, URL tags): a fresh generated
 * account connected to a seeded profile through a connect hand-off, as a person would, and the
 * sandbox's `_state` and test controls, shared by the ad-actions, recommendation and URL-tag tests.
 *
 * A generated account of 120 ads: campaign 1 (ads `ad_<n>_1_*`) is click-to-chat with its own
 * budget; campaign 2 (website ads) has ad set 1 on a daily budget and ad set 2 on a lifetime one.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { call, TestServer } from "./app.ts"
import { driveConsent } from "./providers.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "./tenancy.ts"

export const WRITE_SCOPES = ["connections:read", "connections:write", "campaigns:read", "campaigns:apply"]

export interface AdFixture extends SeededProfile {
  readonly key: string
  readonly account: string
  readonly connectionId: string
  /** The account's number: ids are `cmp_<n>_<c>`, `as_<n>_<c>_<s>`, `ad_<n>_<c>_<s>_<a>`. */
  readonly n: string
}

/** A JSON call with a bearer key; an Idempotency-Key unless `null` (a fresh one when undefined). */
export const send = (key: string, method: string, path: string, body?: unknown, idempotencyKey?: string | null) =>
  call(path, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      ...(idempotencyKey === null ? {} : { "idempotency-key": idempotencyKey ?? crypto.randomUUID() })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** A test-control call on the key's profile's sandbox world (decision 0109). */
export const sandbox = (key: string, method: string, path: string, body?: unknown) =>
  call(`/sandbox/adplatform${path}`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

export const setFaults = (key: string, faults: Record<string, unknown>) =>
  Effect.map(sandbox(key, "POST", "/_faults", faults), (response) => assert.strictEqual(response.status, 200, response.text))

export const clearFaults = (key: string) => setFaults(key, {
  throttle: 0,
  error_rate: 0,
  fail_next: 0,
  timeout_ms: 0,
  missing_permission: false,
  revoke_tokens: false,
  rate_limit_per_second: 100
})

export const patchObjects = (key: string, objects: ReadonlyArray<Record<string, unknown>>) =>
  Effect.map(sandbox(key, "PATCH", "/_state", { objects }), (response) => assert.strictEqual(response.status, 200, response.text))

export const sandboxState = (key: string) => Effect.map(sandbox(key, "GET", "/_state"), (response) => response.json)

export const writeCount = (key: string) => Effect.map(sandboxState(key), (s) => s.write_count as number)

/** An object of the sandbox by id, as `_state` shows it. */
export const objectOf = (key: string, id: string) =>
  Effect.map(sandboxState(key), (s) => {
    for (const account of s.accounts as ReadonlyArray<any>) {
      for (const campaign of account.campaigns) {
        if (campaign.id === id) return campaign
        for (const set of campaign.ad_sets) {
          if (set.id === id) return set
          for (const ad of set.ads) if (ad.id === id) return ad
        }
      }
    }
    return assert.fail(`no sandbox object ${id}`)
  })

const hop = (target: string) =>
  Effect.promise(async () => {
    const response = await fetch(target, { redirect: "manual" })
    await response.text()
    return { status: response.status, location: response.headers.get("location") }
  })

/** A fresh generated account, connected to `profile` through a hand-off (persona chosen at consent). */
export const connectFresh = (profile: SeededProfile & { readonly key: string }, persona = "one_account") =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const arrived = yield* sandbox(profile.key, "PATCH", "/_state", { arrive: { kind: "generated_account", ads: 120 } })
    assert.strictEqual(arrived.status, 201, arrived.text)
    const account: string = arrived.json.account.id
    const minted = yield* send(profile.key, "POST", "/api/v1/connections/adplatform/handoff", { return_url: `${url}/done` }, null)
    assert.strictEqual(minted.status, 201, minted.text)
    const consent = yield* driveConsent(minted.json.data.start_url, { persona })
    assert.strictEqual(consent.status, 303)
    const back = yield* hop(consent.location ?? "")
    assert.strictEqual(back.status, 302)
    const poll = yield* send(profile.key, "GET", `/api/v1/connections/handoffs/${minted.json.data.handoff_id}`, undefined, null)
    assert.strictEqual(poll.json.data.status, "success", poll.text)
    return { account, connectionId: poll.json.data.result.connection_id as string, n: account.slice(4) }
  })

/** A person-created profile (add-on on) with a key holding `campaigns:apply`, and a fresh account connected. */
export const adFixture = (persona = "one_account", scopes: ReadonlyArray<string> = WRITE_SCOPES) =>
  Effect.gen(function*() {
    // A fresh profile has a fresh sandbox world: no faults to clear.
    const profile = yield* seedProfile()
    const { key } = yield* seedApiKey(profile, { scopes, rateLimitPerMinute: 100_000 })
    const connected = yield* connectFresh({ ...profile, key }, persona)
    return { ...profile, key, ...connected } satisfies AdFixture
  })
