import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AUTH_CACHE_TTL_MILLIS } from "../../src/accounts/credentials/service.ts"
import { CredentialPrefix, displayPrefix, isWellFormed, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { call, type HttpResult, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { seedApiKey, seedMemberSession, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const keysPath = (workspaceId: string) => `/api/v1/workspaces/${workspaceId}/api-keys`

/** A request with the given credential headers and an optional JSON body. */
const send = (path: string, headers: Record<string, string>, method = "GET", body?: unknown) =>
  call(path, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const connections = (key: string) => call("/api/v1/connections", { headers: bearer(key) })

/** The workspace's owner, signed in. */
const ownerOf = (profile: SeededProfile) =>
  seedMemberSession(profile, "owner")

/** Polls until `key` stops authenticating; answers the elapsed milliseconds (or fails after 15 s). */
const untilRefused = (key: string) =>
  Effect.gen(function*() {
    const started = Date.now()
    const { status } = yield* eventually(connections(key), (answer) => answer.status !== 200, {
      what: "the key to be refused",
      within: "15 seconds",
      every: "250 millis"
    })
    assert.strictEqual(status, 401)
    return Date.now() - started
  })

const assertNoSecret = (response: HttpResult, plaintext: string) => {
  assert.notInclude(response.text, plaintext)
  assert.notInclude(response.text, secretDigest(plaintext))
  assert.notInclude(response.text, "secret_hash")
}

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("workspace API keys", (it) => {
  describe("an owner's session", () => {
    it.effect("creates a key (201, plaintext once), lists prefixes only, edits it; every change is audited", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const owner = yield* ownerOf(profile)
        const created = yield* send(keysPath(profile.workspaceId), owner.headers, "POST", {
          profile_id: profile.profileId,
          name: "ERP"
        })
        assert.strictEqual(created.status, 201)
        const key = created.json.data
        assert.isTrue(isWellFormed(key.key, CredentialPrefix.apiKey))
        assert.strictEqual(key.prefix, displayPrefix(key.key, CredentialPrefix.apiKey))
        assert.deepStrictEqual(key.scopes, ["analytics:read", "campaigns:read", "conversions:read", "realtime:read"])
        assert.strictEqual(key.rate_limit_per_minute, 60)
        assert.strictEqual(key.profile_id, profile.profileId)
        assert.strictEqual(key.workspace_id, profile.workspaceId)
        assert.strictEqual(key.name, "ERP")
        assert.strictEqual(key.status, "active")
        assert.isNull(key.oauth_app_id)
        assert.isNull(key.expires_at)
        assert.isNull(key.revoked_at)
        assert.notProperty(created.json, "meta")
        assert.notInclude(created.text, secretDigest(key.key))

        const second = yield* send(keysPath(profile.workspaceId), owner.headers, "POST", {
          profile_id: profile.profileId,
          scopes: ["connections:read", "connections:read"],
          rate_limit_per_minute: 5
        })
        assert.strictEqual(second.status, 201)
        assert.deepStrictEqual(second.json.data.scopes, ["connections:read"])
        assert.strictEqual((yield* connections(second.json.data.key)).headers.get("x-ratelimit-limit"), "5")

        // Keyset pages of one: the same two keys, oldest first, and never a secret.
        const first = yield* send(`${keysPath(profile.workspaceId)}?limit=1`, owner.headers)
        assert.strictEqual(first.status, 200)
        assert.strictEqual(first.json.pagination.has_next, true)
        const next = yield* send(
          `${keysPath(profile.workspaceId)}?limit=1&cursor=${first.json.pagination.cursor}`,
          owner.headers
        )
        assert.deepStrictEqual(next.json.pagination, { has_next: false, cursor: null })
        const listed = [...first.json.data, ...next.json.data]
        assert.deepStrictEqual(listed.map((row: { id: string }) => row.id), [key.id, second.json.data.id])
        assert.deepStrictEqual(Object.keys(listed[0]).sort(), [
          "created_at",
          "expires_at",
          "id",
          "name",
          "oauth_app_id",
          "prefix",
          "profile_id",
          "rate_limit_per_minute",
          "revoked_at",
          "rotated_from_id",
          "scopes",
          "status",
          "workspace_id"
        ])
        for (const page of [first, next]) {
          assertNoSecret(page, key.key)
          assertNoSecret(page, second.json.data.key)
        }

        const patched = yield* send(`${keysPath(profile.workspaceId)}/${key.id}`, owner.headers, "PATCH", {
          name: "ERP (prod)",
          scopes: ["analytics:read", "connections:read"],
          rate_limit_per_minute: 120
        })
        assert.strictEqual(patched.status, 200)
        assert.strictEqual(patched.json.data.name, "ERP (prod)")
        assert.deepStrictEqual(patched.json.data.scopes, ["analytics:read", "connections:read"])
        assert.strictEqual(patched.json.data.rate_limit_per_minute, 120)
        assertNoSecret(patched, key.key)
        // The new scope works (the key was not cached before: a fresh look-up sees it).
        assert.strictEqual((yield* connections(key.key)).status, 200)

        const sql = yield* SqlClient
        const audits = yield* sql<{ action: string; target_id: string; actor_kind: string; actor_user_id: string }>`
          SELECT action, target_id, actor_kind, actor_user_id FROM audit_events
          WHERE workspace_id = ${profile.workspaceId} AND target_kind = 'api_key' ORDER BY occurred_at`
        assert.deepStrictEqual(audits.map((row) => [row.action, row.target_id]), [
          ["api_key.created", key.id],
          ["api_key.created", second.json.data.id],
          ["api_key.updated", key.id]
        ])
        assert.isTrue(audits.every((row) => row.actor_kind === "session" && row.actor_user_id === owner.userId))
        const [stored] = yield* sql<{ created_by_user_id: string }>`SELECT created_by_user_id FROM api_keys WHERE id = ${key.id}`
        assert.strictEqual(stored?.created_by_user_id, owner.userId)
      }))

    it.effect("refuses unknown scopes, a bad rate limit and a profile that is not the workspace's with 400s naming them", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const owner = yield* ownerOf(profile)
        const post = (body: unknown) => send(keysPath(profile.workspaceId), owner.headers, "POST", body)

        const unknownScope = yield* post({ profile_id: profile.profileId, scopes: ["analytics:read", "everything:write"] })
        assert.strictEqual(unknownScope.status, 400)
        assert.strictEqual(unknownScope.json.error.code, "validation_error")
        assert.include(unknownScope.json.error.message, "body.scopes")
        assert.include(unknownScope.json.error.message, "everything:write")

        for (const rate of [0, 10_001, 1.5]) {
          const badRate = yield* post({ profile_id: profile.profileId, rate_limit_per_minute: rate })
          assert.strictEqual(badRate.status, 400, String(rate))
          assert.include(badRate.json.error.message, "body.rate_limit_per_minute")
        }

        const foreign = yield* seedProfile()
        const archived = yield* seedProfile()
        const sql = yield* SqlClient
        const archivedSibling = crypto.randomUUID()
        yield* sql`INSERT INTO profiles (id, workspace_id, archived_at) VALUES (${archivedSibling}, ${profile.workspaceId}, now())`
        for (const profileId of [foreign.profileId, archived.profileId, archivedSibling, crypto.randomUUID(), "nope"]) {
          const refused = yield* post({ profile_id: profileId })
          assert.strictEqual(refused.status, 400, profileId)
          assert.strictEqual(refused.json.error.code, "validation_error")
          assert.include(refused.json.error.message, "body.profile_id")
        }

        const patchUnknown = yield* Effect.flatMap(
          post({ profile_id: profile.profileId }),
          (created) =>
            send(`${keysPath(profile.workspaceId)}/${created.json.data.id}`, owner.headers, "PATCH", { scopes: ["root"] })
        )
        assert.strictEqual(patchUnknown.status, 400)
        assert.include(patchUnknown.json.error.message, "root")
        const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = ${profile.workspaceId}`
        assert.strictEqual(count?.n, 1, "only the one valid create wrote a key")
      }))

    it.effect("healthcare-family profiles: customers:read and visitors:read are left out (listed in meta.withheld_scopes)", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const owner = yield* ownerOf(profile)
        const sql = yield* SqlClient
        yield* sql`UPDATE workspaces SET is_healthcare_agency = true WHERE id = ${profile.workspaceId}`
        const created = yield* send(keysPath(profile.workspaceId), owner.headers, "POST", {
          profile_id: profile.profileId,
          scopes: ["customers:read", "analytics:read", "visitors:read"]
        })
        assert.strictEqual(created.status, 201)
        assert.deepStrictEqual(created.json.data.scopes, ["analytics:read"])
        assert.deepStrictEqual(created.json.meta, { withheld_scopes: ["customers:read", "visitors:read"] })

        const onlyPerson = yield* send(keysPath(profile.workspaceId), owner.headers, "POST", {
          profile_id: profile.profileId,
          scopes: ["customers:read"]
        })
        assert.strictEqual(onlyPerson.status, 400)
        assert.include(onlyPerson.json.error.message, "customers:read")

        const patched = yield* send(`${keysPath(profile.workspaceId)}/${created.json.data.id}`, owner.headers, "PATCH", {
          scopes: ["visitors:read", "conversions:read"]
        })
        assert.strictEqual(patched.status, 200)
        assert.deepStrictEqual(patched.json.data.scopes, ["conversions:read"])
        assert.deepStrictEqual(patched.json.meta, { withheld_scopes: ["visitors:read"] })
      }))
  })

  describe("revocation and rotation", () => {
    it.effect("revoke stops the key within the auth cache's lifetime; DELETE is the same revoke; both repeat as 200", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const owner = yield* ownerOf(profile)
        const created = yield* send(keysPath(profile.workspaceId), owner.headers, "POST", {
          profile_id: profile.profileId,
          scopes: ["connections:read"]
        })
        const key = created.json.data
        assert.strictEqual((yield* connections(key.key)).status, 200)

        const revoked = yield* send(`${keysPath(profile.workspaceId)}/${key.id}/revoke`, owner.headers, "POST")
        assert.strictEqual(revoked.status, 200)
        assert.strictEqual(revoked.json.data.status, "revoked")
        assert.isString(revoked.json.data.revoked_at)
        assertNoSecret(revoked, key.key)
        const elapsed = yield* untilRefused(key.key)
        assert.isAtMost(elapsed, AUTH_CACHE_TTL_MILLIS + 1_000)
        const refused = yield* connections(key.key)
        assert.strictEqual(refused.json.error.code, "unauthorized")

        const again = yield* send(`${keysPath(profile.workspaceId)}/${key.id}`, owner.headers, "DELETE")
        assert.strictEqual(again.status, 200)
        assert.deepStrictEqual(again.json.data, revoked.json.data, "a repeat changes nothing")
        const edit = yield* send(`${keysPath(profile.workspaceId)}/${key.id}`, owner.headers, "PATCH", { name: "x" })
        assert.strictEqual(edit.status, 409)
        assert.strictEqual(edit.json.error.code, "invalid_state")
        const rotate = yield* send(`${keysPath(profile.workspaceId)}/${key.id}/rotate`, owner.headers, "POST")
        assert.strictEqual(rotate.status, 409)

        const other = yield* send(keysPath(profile.workspaceId), owner.headers, "POST", {
          profile_id: profile.profileId,
          scopes: ["connections:read"]
        })
        const deleted = yield* send(`${keysPath(profile.workspaceId)}/${other.json.data.id}`, owner.headers, "DELETE")
        assert.strictEqual(deleted.status, 200)
        assert.strictEqual(deleted.json.data.status, "revoked")
        assert.strictEqual((yield* connections(other.json.data.key)).status, 401, "never cached: refused at once")

        const listed = yield* send(keysPath(profile.workspaceId), owner.headers)
        assert.deepStrictEqual(listed.json.data.map((row: { status: string }) => row.status), ["revoked", "revoked"])
        const sql = yield* SqlClient
        const audits = yield* sql<{ action: string; details: { via: string } }>`
          SELECT action, details FROM audit_events
          WHERE workspace_id = ${profile.workspaceId} AND action = 'api_key.revoked' ORDER BY occurred_at`
        assert.deepStrictEqual(audits.map((row) => row.details.via), ["revoke", "delete"], "repeats are not audited")
      }), 30_000)

    it.effect("rotate: both keys authenticate at once; the old one ends 48 hours later, and stops once expired", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const owner = yield* ownerOf(profile)
        const created = yield* send(keysPath(profile.workspaceId), owner.headers, "POST", {
          profile_id: profile.profileId,
          name: "POS",
          scopes: ["connections:read", "analytics:read"],
          rate_limit_per_minute: 90
        })
        const old = created.json.data
        assert.strictEqual((yield* connections(old.key)).status, 200)

        const before = Date.now()
        const rotated = yield* send(`${keysPath(profile.workspaceId)}/${old.id}/rotate`, owner.headers, "POST")
        assert.strictEqual(rotated.status, 201)
        const successor = rotated.json.data
        assert.isTrue(isWellFormed(successor.key, CredentialPrefix.apiKey))
        assert.notStrictEqual(successor.key, old.key)
        assert.notStrictEqual(successor.id, old.id)
        assert.strictEqual(successor.rotated_from_id, old.id)
        assert.strictEqual(successor.name, "POS")
        assert.deepStrictEqual(successor.scopes, ["connections:read", "analytics:read"])
        assert.strictEqual(successor.rate_limit_per_minute, 90)
        assert.isNull(successor.expires_at)
        assert.notInclude(rotated.text, old.key)
        const previous = rotated.json.meta.rotated_from
        assert.strictEqual(previous.id, old.id)
        assert.strictEqual(previous.status, "active")
        const graceMillis = Date.parse(previous.expires_at) - before
        assert.isAtLeast(graceMillis, 48 * 3_600_000 - 60_000)
        assert.isAtMost(graceMillis, 48 * 3_600_000 + 60_000)

        assert.strictEqual((yield* connections(old.key)).status, 200)
        assert.strictEqual((yield* connections(successor.key)).status, 200)

        const twice = yield* send(`${keysPath(profile.workspaceId)}/${old.id}/rotate`, owner.headers, "POST")
        assert.strictEqual(twice.status, 409)
        assert.strictEqual(twice.json.error.reason, "already_rotated")

        // The grace is over: the old key stops by itself (within the auth cache), the new one goes on.
        const sql = yield* SqlClient
        yield* sql`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = ${old.id}`
        const elapsed = yield* untilRefused(old.key)
        assert.isAtMost(elapsed, AUTH_CACHE_TTL_MILLIS + 1_000)
        assert.strictEqual((yield* connections(successor.key)).status, 200)

        const listed = yield* send(keysPath(profile.workspaceId), owner.headers)
        assert.deepStrictEqual(
          listed.json.data.map((row: { id: string; status: string }) => [row.id, row.status]),
          [[old.id, "expired"], [successor.id, "active"]]
        )
        assertNoSecret(listed, old.key)
        assertNoSecret(listed, successor.key)
        const [audit] = yield* sql<{ target_id: string; details: { rotated_from_id: string } }>`
          SELECT target_id, details FROM audit_events WHERE workspace_id = ${profile.workspaceId} AND action = 'api_key.rotated'`
        assert.strictEqual(audit?.target_id, successor.id)
        assert.strictEqual(audit?.details.rotated_from_id, old.id)
      }), 30_000)
  })

  describe("who may call", () => {
    it.effect("a user token lists but never writes (403 insufficient_scope whatever its grant); the description agrees", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const owner = yield* ownerOf(profile)
        const key = (yield* send(keysPath(profile.workspaceId), owner.headers, "POST", { profile_id: profile.profileId })).json.data
        const sql = yield* SqlClient
        const token = mintSecret(CredentialPrefix.userToken)
        yield* sql`INSERT INTO user_tokens (id, user_id, prefix, secret_hash, grants)
                   VALUES (${crypto.randomUUID()}, ${owner.userId}, ${displayPrefix(token, CredentialPrefix.userToken)},
                           ${secretDigest(token)}, ${["mcp:read", "mcp:read_pii", "mcp:write"]})`
        const asToken = bearer(token)

        const listed = yield* send(keysPath(profile.workspaceId), asToken)
        assert.strictEqual(listed.status, 200)
        assert.deepStrictEqual(listed.json.data.map((row: { id: string }) => row.id), [key.id])
        assertNoSecret(listed, key.key)

        const writes: Array<[string, string, unknown]> = [
          ["POST", keysPath(profile.workspaceId), { profile_id: profile.profileId }],
          ["PATCH", `${keysPath(profile.workspaceId)}/${key.id}`, { name: "x" }],
          ["DELETE", `${keysPath(profile.workspaceId)}/${key.id}`, undefined],
          ["POST", `${keysPath(profile.workspaceId)}/${key.id}/revoke`, undefined],
          ["POST", `${keysPath(profile.workspaceId)}/${key.id}/rotate`, undefined]
        ]
        for (const [method, path, body] of writes) {
          const refused = yield* send(path, asToken, method, body)
          assert.strictEqual(refused.status, 403, `${method} ${path}`)
          assert.strictEqual(refused.json.error.code, "insufficient_scope")
        }
        const [after] = yield* sql<{ n: number; live: number }>`
          SELECT count(*)::int AS n, count(*) FILTER (WHERE revoked_at IS NULL AND expires_at IS NULL)::int AS live
          FROM api_keys WHERE workspace_id = ${profile.workspaceId}`
        assert.deepStrictEqual(after, { n: 1, live: 1 }, "nothing was written")

        const spec = (yield* call("/api/v1/openapi.json")).json
        const item = spec.paths["/api/v1/workspaces/{workspaceId}/api-keys"]
        const byKey = spec.paths["/api/v1/workspaces/{workspaceId}/api-keys/{keyId}"]
        assert.include(item.get["x-auth"], "user_token")
        assert.deepInclude(item.get.security, { userToken: [] })
        for (
          const op of [
            item.post,
            byKey.patch,
            byKey.delete,
            spec.paths["/api/v1/workspaces/{workspaceId}/api-keys/{keyId}/revoke"].post,
            spec.paths["/api/v1/workspaces/{workspaceId}/api-keys/{keyId}/rotate"].post
          ]
        ) {
          assert.deepStrictEqual(op["x-auth"], ["session", "app_client"])
          assert.notDeepInclude(op.security, { userToken: [] })
          assert.strictEqual(op["x-scope-grain"], "workspace")
        }
      }))

    it.effect("an analyst's or guest's session is 403; an API key is 403", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        for (const role of ["analyst", "guest"] as const) {
          const member = yield* seedMemberSession(profile, role)
          for (
            const [method, body] of [["GET", undefined], ["POST", { profile_id: profile.profileId }]] as const
          ) {
            const refused = yield* send(keysPath(profile.workspaceId), member.headers, method, body)
            assert.strictEqual(refused.status, 403, `${role} ${method}`)
            assert.strictEqual(refused.json.error.code, "insufficient_scope")
          }
        }
        const admin = yield* seedMemberSession(profile, "admin")
        assert.strictEqual((yield* send(keysPath(profile.workspaceId), admin.headers)).status, 200)
        const { key } = yield* seedApiKey(profile, { scopes: ["analytics:read"] })
        const asKey = yield* send(keysPath(profile.workspaceId), bearer(key))
        assert.strictEqual(asKey.status, 403)
        assert.strictEqual(asKey.json.error.code, "insufficient_scope")
        const sql = yield* SqlClient
        const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = ${profile.workspaceId}`
        assert.strictEqual(count?.n, 1)
      }))

    it.effect("the app that created the workspace manages its keys, within its grant; another app gets the 404", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const provisioned = yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `m-${crypto.randomUUID()}` })
        assert.strictEqual(provisioned.status, 201)
        const { workspace_id: workspaceId, profile_id: profileId } = provisioned.json.data

        const created = yield* asApp(app, keysPath(workspaceId), "POST", { profile_id: profileId, scopes: ["connections:read"] })
        assert.strictEqual(created.status, 201)
        assert.strictEqual(created.json.data.oauth_app_id, app.id)
        assert.strictEqual((yield* connections(created.json.data.key)).status, 200)

        // The grant is the connect-broker tier ({connections}): the default analytics scopes are outside it.
        const outside = yield* asApp(app, keysPath(workspaceId), "POST", { profile_id: profileId })
        assert.strictEqual(outside.status, 403)
        assert.strictEqual(outside.json.error.code, "insufficient_scope")
        assert.include(outside.json.error.message, "analytics:read")

        // The grant binds the key whoever edits it: an admin cannot widen it past the grant either.
        const admin = yield* seedMemberSession({ workspaceId, profileId }, "admin")
        const keyPath = `${keysPath(workspaceId)}/${created.json.data.id}`
        const widened = yield* send(keyPath, admin.headers, "PATCH", { scopes: ["connections:read", "analytics:read"] })
        assert.strictEqual(widened.status, 403)
        assert.include(widened.json.error.message, "analytics:read")
        const within = yield* send(keyPath, admin.headers, "PATCH", { scopes: ["connections:read", "connections:write"] })
        assert.strictEqual(within.status, 200)
        assert.deepStrictEqual(within.json.data.scopes, ["connections:read", "connections:write"])

        const listed = yield* asApp(app, keysPath(workspaceId), "GET")
        assert.strictEqual(listed.status, 200)
        assert.deepStrictEqual(listed.json.data.map((row: { id: string }) => row.id), [created.json.data.id])
        const rotated = yield* asApp(app, `${keysPath(workspaceId)}/${created.json.data.id}/rotate`, "POST")
        assert.strictEqual(rotated.status, 201)
        assert.strictEqual(rotated.json.data.oauth_app_id, app.id)
        const revoked = yield* asApp(app, `${keysPath(workspaceId)}/${rotated.json.data.id}/revoke`, "POST")
        assert.strictEqual(revoked.json.data.status, "revoked")

        const sql = yield* SqlClient
        const audits = yield* sql<{ action: string; actor_kind: string; actor_id: string }>`
          SELECT action, actor_kind, actor_id FROM audit_events
          WHERE workspace_id = ${workspaceId} AND target_kind = 'api_key' ORDER BY occurred_at`
        assert.deepStrictEqual(audits.map((row) => [row.action, row.actor_kind]), [
          ["api_key.created", "app_client"],
          ["api_key.updated", "session"],
          ["api_key.rotated", "app_client"],
          ["api_key.revoked", "app_client"]
        ])
        assert.isTrue(audits.every((row) => row.actor_kind === "session" || row.actor_id === app.id))

        const other = yield* registerApp("Other partner")
        const foreign = yield* asApp(other, keysPath(workspaceId), "GET")
        const unknown = yield* asApp(other, keysPath(crypto.randomUUID()), "GET")
        assert.strictEqual(foreign.status, 404)
        assert.strictEqual(withoutRequestId(foreign.text), withoutRequestId(unknown.text))
      }))

    it.effect("unknown, malformed, foreign and archived workspaces, and unknown or foreign keys: one identical 404", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const owner = yield* ownerOf(profile)
        const mine = (yield* send(keysPath(profile.workspaceId), owner.headers, "POST", { profile_id: profile.profileId })).json.data
        const elsewhere = yield* seedProfile()
        const elsewhereOwner = yield* ownerOf(elsewhere)
        const theirs = (yield* send(keysPath(elsewhere.workspaceId), elsewhereOwner.headers, "POST", {
          profile_id: elsewhere.profileId
        })).json.data
        const archived = yield* seedProfile()
        const archivedOwner = yield* ownerOf(archived)
        const sql = yield* SqlClient
        yield* sql`UPDATE workspaces SET archived_at = now() WHERE id = ${archived.workspaceId}`

        const answers: Array<[string, HttpResult]> = []
        const probe = (label: string, path: string, method: string, headers: Record<string, string>, body?: unknown) =>
          Effect.map(send(path, headers, method, body), (response) => {
            answers.push([label, response])
          })
        for (const workspaceId of [crypto.randomUUID(), "not-a-uuid", elsewhere.workspaceId]) {
          yield* probe(`list ${workspaceId}`, keysPath(workspaceId), "GET", owner.headers)
          yield* probe(`create ${workspaceId}`, keysPath(workspaceId), "POST", owner.headers, { profile_id: profile.profileId })
          yield* probe(`revoke in ${workspaceId}`, `${keysPath(workspaceId)}/${mine.id}/revoke`, "POST", owner.headers)
        }
        yield* probe("archived list", keysPath(archived.workspaceId), "GET", archivedOwner.headers)
        for (const keyId of [crypto.randomUUID(), "not-a-uuid", theirs.id]) {
          const path = `${keysPath(profile.workspaceId)}/${keyId}`
          yield* probe(`patch ${keyId}`, path, "PATCH", owner.headers, { name: "x" })
          yield* probe(`delete ${keyId}`, path, "DELETE", owner.headers)
          yield* probe(`revoke ${keyId}`, `${path}/revoke`, "POST", owner.headers)
          yield* probe(`rotate ${keyId}`, `${path}/rotate`, "POST", owner.headers)
        }
        for (const [label, response] of answers) assert.strictEqual(response.status, 404, label)
        assert.strictEqual(new Set(answers.map(([, response]) => withoutRequestId(response.text))).size, 1)

        const [foreignKey] = yield* sql<{ revoked_at: unknown }>`SELECT revoked_at FROM api_keys WHERE id = ${theirs.id}`
        assert.isNull(foreignKey?.revoked_at, "the other workspace's key was not touched")
        const [mineAfter] = yield* sql<{ revoked_at: unknown }>`SELECT revoked_at FROM api_keys WHERE id = ${mine.id}`
        assert.isNull(mineAfter?.revoked_at)
      }))
  })
})
