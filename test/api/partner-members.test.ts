import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CredentialPrefix, mintSecret, secretDigest } from "../../src/kernel/credentials/tokens.ts"
import { call, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { asApp, type PartnerApp, registerApp } from "../support/partner.ts"
import { seedProfile } from "../support/tenancy.ts"

const ref = () => `merchant-${crypto.randomUUID().slice(0, 8)}`
const email = (name = "person") => `${name}-${crypto.randomUUID().slice(0, 8)}@team.example`

/** A provisioned profile (its workspace has an owner) and a second live profile in the same workspace. */
const provisioned = Effect.fn("test.provisioned")(function*(app: PartnerApp, options: { readonly second?: boolean } = {}) {
  const ownerEmail = email("owner")
  const created = (yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: ref(), email: ownerEmail })).json.data
  const sql = yield* SqlClient
  const second = crypto.randomUUID()
  if (options.second === true) {
    yield* sql`INSERT INTO profiles (id, workspace_id, name) VALUES (${second}, ${created.workspace_id}, 'second')`
  }
  const [owner] = yield* sql<{ user_id: string }>`
    SELECT user_id FROM workspace_memberships WHERE workspace_id = ${created.workspace_id} AND role = 'owner'`
  return {
    workspaceId: created.workspace_id as string,
    profileId: created.profile_id as string,
    secondProfileId: second,
    ownerEmail,
    ownerId: owner?.user_id ?? ""
  }
})

const membersPath = (workspaceId: string) => `/api/v1/workspaces/${workspaceId}/members`

/** A signed-in session for a person the members route created (such people have no password). */
const sessionFor = Effect.fn("test.sessionFor")(function*(userId: string) {
  const sql = yield* SqlClient
  const session = mintSecret(CredentialPrefix.session)
  yield* sql`
    INSERT INTO sessions (id, user_id, secret_hash, csrf_token_hash, expires_at)
    VALUES (${crypto.randomUUID()}, ${userId}, ${secretDigest(session)}, ${secretDigest(crypto.randomUUID())},
            now() + interval '1 hour')`
  return `svc_session=${session}`
})

const connectionsStatus = (cookie: string, profileId: string) =>
  Effect.map(call(`/api/v1/connections?profile_id=${profileId}`, { headers: { cookie } }), (response) => response.status)

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("workspace members (partner)", (it) => {
  describe("PUT /api/v1/workspaces/{id}/members", () => {
    it.effect("none → active: the person is created without a password, 201; the same body again is 200 and writes nothing", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const ws = yield* provisioned(app)
        const address = email("analyst")
        const first = yield* asApp(app, membersPath(ws.workspaceId), "PUT", { email: address, workspace_role: "analyst" })
        assert.strictEqual(first.status, 201, first.text)
        const data = first.json.data
        assert.strictEqual(data.created, true)
        assert.strictEqual(data.changed, true)
        assert.strictEqual(data.email, address)
        assert.strictEqual(data.workspace_role, "analyst")
        assert.deepStrictEqual(data.profiles, [])
        assert.match(data.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)

        const sql = yield* SqlClient
        const [user] = yield* sql<{ password_hash: string | null }>`SELECT password_hash FROM users WHERE id = ${data.user_id}`
        assert.strictEqual(user?.password_hash, null)

        const again = yield* asApp(app, membersPath(ws.workspaceId), "PUT", {
          email: address.toUpperCase(),
          workspace_role: "analyst"
        })
        assert.strictEqual(again.status, 200)
        assert.strictEqual(again.json.data.created, false)
        assert.strictEqual(again.json.data.changed, false)
        assert.strictEqual(again.json.data.user_id, data.user_id, "found by email case-insensitively")
        assert.strictEqual(again.json.data.email, address, "the stored address is answered")
        const audits = yield* sql<{ action: string; actor_kind: string; actor_id: string }>`
          SELECT action, actor_kind, actor_id FROM audit_events
          WHERE workspace_id = ${ws.workspaceId} AND target_id = ${data.user_id}`
        assert.deepStrictEqual(audits, [{ action: "member.added", actor_kind: "app_client", actor_id: app.id }])
      }))

    it.effect("none → active for a person who already exists elsewhere: found by email, not duplicated", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const elsewhere = yield* provisioned(app)
        const ws = yield* provisioned(app)
        const response = yield* asApp(app, membersPath(ws.workspaceId), "PUT", {
          email: elsewhere.ownerEmail.toUpperCase(),
          workspace_role: "admin"
        })
        assert.strictEqual(response.status, 201)
        assert.strictEqual(response.json.data.user_id, elsewhere.ownerId)
        const sql = yield* SqlClient
        const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM users WHERE lower(email) = lower(${elsewhere.ownerEmail})`
        assert.strictEqual(count?.n, 1)
      }))

    it.effect("active → active: a changed role is 200 changed; profiles present replace the whole access, absent leave it", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const ws = yield* provisioned(app, { second: true })
        const address = email("guest")
        const path = membersPath(ws.workspaceId)
        const created = yield* asApp(app, path, "PUT", {
          email: address,
          workspace_role: "guest",
          profiles: [
            { profile_id: ws.profileId, profile_role: "viewer" },
            { profile_id: ws.secondProfileId.toUpperCase(), profile_role: "manager", permissions: ["manage:team", "view:dashboard", "view:dashboard"] }
          ]
        })
        assert.strictEqual(created.status, 201, created.text)
        const byProfile = (profiles: ReadonlyArray<any>) => Object.fromEntries(profiles.map((p) => [p.profile_id, p]))
        const access = byProfile(created.json.data.profiles)
        assert.deepStrictEqual(access[ws.profileId], {
          profile_id: ws.profileId,
          profile_role: "viewer",
          permissions: ["view:dashboard", "view:attribution", "view:campaigns"],
          permissions_source: "role_default"
        })
        assert.deepStrictEqual(access[ws.secondProfileId], {
          profile_id: ws.secondProfileId,
          profile_role: "manager",
          permissions: ["view:dashboard", "manage:team"],
          permissions_source: "explicit"
        })

        const roleChanged = yield* asApp(app, path, "PUT", { email: address, workspace_role: "analyst" })
        assert.strictEqual(roleChanged.status, 200)
        assert.strictEqual(roleChanged.json.data.created, false)
        assert.strictEqual(roleChanged.json.data.changed, true)
        assert.strictEqual(roleChanged.json.data.workspace_role, "analyst")
        assert.strictEqual(roleChanged.json.data.profiles.length, 2, "profiles absent: access unchanged")

        const replaced = yield* asApp(app, path, "PUT", {
          email: address,
          workspace_role: "analyst",
          profiles: [{ profile_id: ws.secondProfileId, profile_role: "viewer", permissions: [] }]
        })
        assert.strictEqual(replaced.status, 200)
        assert.strictEqual(replaced.json.data.changed, true)
        assert.deepStrictEqual(replaced.json.data.profiles, [
          { profile_id: ws.secondProfileId, profile_role: "viewer", permissions: [], permissions_source: "explicit" }
        ])
        const sql = yield* SqlClient
        const rows = yield* sql<{ profile_id: string; removed: boolean }>`
          SELECT profile_id, removed_at IS NOT NULL AS removed FROM profile_memberships
          WHERE user_id = ${created.json.data.user_id} ORDER BY removed`
        assert.deepStrictEqual(rows, [
          { profile_id: ws.secondProfileId, removed: false },
          { profile_id: ws.profileId, removed: true }
        ], "the unlisted membership is soft-removed, its row kept")

        const same = yield* asApp(app, path, "PUT", {
          email: address,
          workspace_role: "analyst",
          profiles: [{ profile_id: ws.secondProfileId, profile_role: "viewer", permissions: [] }]
        })
        assert.strictEqual(same.status, 200)
        assert.strictEqual(same.json.data.changed, false)
        const cleared = yield* asApp(app, path, "PUT", { email: address, workspace_role: "analyst", profiles: [] })
        assert.deepStrictEqual(cleared.json.data.profiles, [], "an empty list removes every profile access")
        const audits = yield* sql<{ action: string }>`
          SELECT action FROM audit_events WHERE target_id = ${created.json.data.user_id} ORDER BY occurred_at`
        assert.deepStrictEqual(audits.map((a) => a.action), ["member.added", "member.updated", "member.updated", "member.updated"])
      }))

    it.effect("an unknown permission key is 400 validation_error naming it; nothing written", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const ws = yield* provisioned(app)
        const address = email()
        const refused = yield* asApp(app, membersPath(ws.workspaceId), "PUT", {
          email: address,
          workspace_role: "guest",
          profiles: [{ profile_id: ws.profileId, profile_role: "viewer", permissions: ["view:dashboard", "view:everything"] }]
        })
        assert.strictEqual(refused.status, 400)
        assert.strictEqual(refused.json.error.code, "validation_error")
        assert.include(refused.json.error.message, "view:everything")
        assert.include(refused.json.error.message, "body.profiles.0.permissions.1")
        const sql = yield* SqlClient
        const users = yield* sql`SELECT id FROM users WHERE lower(email) = lower(${address})`
        assert.strictEqual(users.length, 0)
      }))

    it.effect("owner is never assignable (400); a profile not live in this workspace is 400 naming body.profiles.N.profile_id", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const ws = yield* provisioned(app)
        const other = yield* provisioned(app)
        const path = membersPath(ws.workspaceId)
        const owner = yield* asApp(app, path, "PUT", { email: email(), workspace_role: "owner" })
        assert.strictEqual(owner.status, 400)
        assert.strictEqual(owner.json.error.code, "validation_error")
        assert.include(owner.json.error.message, "body.workspace_role")

        const sql = yield* SqlClient
        const archived = crypto.randomUUID()
        yield* sql`INSERT INTO profiles (id, workspace_id, name, archived_at) VALUES (${archived}, ${ws.workspaceId}, 'gone', now())`
        for (const profileId of [other.profileId, archived, crypto.randomUUID(), "not-a-uuid"]) {
          const address = email()
          const refused = yield* asApp(app, path, "PUT", {
            email: address,
            workspace_role: "guest",
            profiles: [{ profile_id: ws.profileId, profile_role: "viewer" }, { profile_id: profileId, profile_role: "viewer" }]
          })
          assert.strictEqual(refused.status, 400, profileId)
          assert.strictEqual(refused.json.error.code, "validation_error")
          assert.include(refused.json.error.message, "body.profiles.1.profile_id")
          const users = yield* sql`SELECT id FROM users WHERE lower(email) = lower(${address})`
          assert.strictEqual(users.length, 0, "nothing written")
        }
        const twice = yield* asApp(app, path, "PUT", {
          email: email(),
          workspace_role: "guest",
          profiles: [{ profile_id: ws.profileId, profile_role: "viewer" }, { profile_id: ws.profileId, profile_role: "manager" }]
        })
        assert.strictEqual(twice.status, 400)
        assert.include(twice.json.error.message, "body.profiles.1.profile_id")
      }))

    it.effect("the owner: any change is 409 invalid_state and nothing moves", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const ws = yield* provisioned(app)
        for (const role of ["admin", "guest"]) {
          const refused = yield* asApp(app, membersPath(ws.workspaceId), "PUT", {
            email: ws.ownerEmail.toUpperCase(),
            workspace_role: role,
            profiles: [{ profile_id: ws.profileId, profile_role: "viewer" }]
          })
          assert.strictEqual(refused.status, 409)
          assert.strictEqual(refused.json.error.code, "invalid_state")
        }
        const sql = yield* SqlClient
        const [row] = yield* sql<{ role: string; removed: boolean }>`
          SELECT role, removed_at IS NOT NULL AS removed FROM workspace_memberships
          WHERE workspace_id = ${ws.workspaceId} AND user_id = ${ws.ownerId}`
        assert.deepStrictEqual(row, { role: "owner", removed: false })
        const profiles = yield* sql`SELECT 1 FROM profile_memberships WHERE user_id = ${ws.ownerId}`
        assert.strictEqual(profiles.length, 0)
      }))
  })

  describe("DELETE /api/v1/workspaces/{id}/members/{userId}", () => {
    it.effect("active → removed (rows kept), 200 removed true; again, or never a member: 200 removed false; PUT revives with 201", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const ws = yield* provisioned(app)
        const address = email()
        const put = yield* asApp(app, membersPath(ws.workspaceId), "PUT", {
          email: address,
          workspace_role: "guest",
          profiles: [{ profile_id: ws.profileId, profile_role: "manager" }]
        })
        const userId = put.json.data.user_id
        const removed = yield* asApp(app, `${membersPath(ws.workspaceId)}/${userId}`, "DELETE")
        assert.strictEqual(removed.status, 200)
        assert.deepStrictEqual(removed.json, { data: { removed: true } })
        const sql = yield* SqlClient
        const [state] = yield* sql<{ workspace_removed: boolean; profile_removed: boolean }>`
          SELECT (SELECT removed_at IS NOT NULL FROM workspace_memberships WHERE workspace_id = ${ws.workspaceId} AND user_id = ${userId}) AS workspace_removed,
                 (SELECT removed_at IS NOT NULL FROM profile_memberships WHERE profile_id = ${ws.profileId} AND user_id = ${userId}) AS profile_removed`
        assert.deepStrictEqual(state, { workspace_removed: true, profile_removed: true })

        for (const id of [userId, crypto.randomUUID(), "not-a-uuid"]) {
          const again = yield* asApp(app, `${membersPath(ws.workspaceId)}/${id}`, "DELETE")
          assert.strictEqual(again.status, 200, id)
          assert.deepStrictEqual(again.json, { data: { removed: false } })
        }
        const audits = yield* sql<{ action: string }>`SELECT action FROM audit_events WHERE target_id = ${userId} ORDER BY occurred_at`
        assert.deepStrictEqual(audits.map((a) => a.action), ["member.added", "member.removed"])

        const revived = yield* asApp(app, membersPath(ws.workspaceId), "PUT", { email: address, workspace_role: "analyst" })
        assert.strictEqual(revived.status, 201)
        assert.strictEqual(revived.json.data.user_id, userId)
        assert.deepStrictEqual(revived.json.data.profiles, [], "removed profile access does not come back")
      }))

    it.effect("the owner: 409 invalid_state, still a member", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const ws = yield* provisioned(app)
        const refused = yield* asApp(app, `${membersPath(ws.workspaceId)}/${ws.ownerId}`, "DELETE")
        assert.strictEqual(refused.status, 409)
        assert.strictEqual(refused.json.error.code, "invalid_state")
        const listed = yield* asApp(app, membersPath(ws.workspaceId), "GET")
        assert.deepStrictEqual(listed.json.data.map((m: any) => m.workspace_role), ["owner"])
      }))
  })

  describe("GET /api/v1/workspaces/{id}/members", () => {
    it.effect("lists active members with their effective access, keyset-paginated; removed members are not listed", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const ws = yield* provisioned(app)
        const path = membersPath(ws.workspaceId)
        const admin = (yield* asApp(app, path, "PUT", { email: email("admin"), workspace_role: "admin" })).json.data
        const guest = (yield* asApp(app, path, "PUT", {
          email: email("guest"),
          workspace_role: "guest",
          profiles: [{ profile_id: ws.profileId, profile_role: "viewer", permissions: ["view:customers"] }]
        })).json.data
        const gone = (yield* asApp(app, path, "PUT", { email: email("gone"), workspace_role: "analyst" })).json.data
        yield* asApp(app, `${path}/${gone.user_id}`, "DELETE")

        const all = yield* asApp(app, path, "GET")
        assert.strictEqual(all.status, 200)
        assert.deepStrictEqual(all.json.data.map((m: any) => m.user_id), [ws.ownerId, admin.user_id, guest.user_id])
        assert.deepStrictEqual(all.json.pagination, { has_next: false, cursor: null })
        const listedGuest = all.json.data[2]
        assert.deepStrictEqual(listedGuest, {
          user_id: guest.user_id,
          email: guest.email,
          workspace_role: "guest",
          profiles: [{ profile_id: ws.profileId, profile_role: "viewer", permissions: ["view:customers"], permissions_source: "explicit" }],
          created_at: guest.created_at
        })

        const seen: Array<string> = []
        let cursor: string | null = null
        do {
          const page: any = yield* asApp(app, `${path}?limit=1${cursor === null ? "" : `&cursor=${cursor}`}`, "GET")
          assert.strictEqual(page.status, 200)
          assert.isAtMost(page.json.data.length, 1)
          seen.push(...page.json.data.map((m: any) => m.user_id))
          cursor = page.json.pagination.cursor
        } while (cursor !== null)
        assert.deepStrictEqual(seen, [ws.ownerId, admin.user_id, guest.user_id])
      }))
  })

  describe("who may call", () => {
    it.effect("another app's, unknown, archived and malformed workspaces: one identical 404 on every route", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const foreign = yield* provisioned(yield* registerApp("Other"))
        const archived = yield* provisioned(app)
        yield* asApp(app, `/api/v1/profiles/${archived.profileId}`, "DELETE")
        const human = yield* seedProfile()
        const answers = new Set<string>()
        for (const id of [foreign.workspaceId, crypto.randomUUID(), archived.workspaceId, human.workspaceId, "not-a-uuid"]) {
          for (const [method, path, body] of [
            ["GET", membersPath(id), undefined],
            ["PUT", membersPath(id), { email: email(), workspace_role: "analyst" }],
            ["DELETE", `${membersPath(id)}/${foreign.ownerId}`, undefined]
          ] as const) {
            const response = yield* asApp(app, path, method, body)
            assert.strictEqual(response.status, 404, `${method} ${id}`)
            answers.add(withoutRequestId(response.text))
          }
        }
        assert.strictEqual(answers.size, 1)
        const sql = yield* SqlClient
        const [owner] = yield* sql<{ removed: boolean }>`
          SELECT removed_at IS NOT NULL AS removed FROM workspace_memberships
          WHERE workspace_id = ${foreign.workspaceId} AND user_id = ${foreign.ownerId}`
        assert.strictEqual(owner?.removed, false)
      }))

    it.effect("without the app credential: 401", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const ws = yield* provisioned(app)
        const response = yield* call(membersPath(ws.workspaceId))
        assert.strictEqual(response.status, 401)
      }))
  })

  describe("what membership reaches", () => {
    it.effect("a guest reaches only the profiles named for it; an analyst reaches every profile; removal ends both", () =>
      Effect.gen(function*() {
        const app = yield* registerApp()
        const ws = yield* provisioned(app, { second: true })
        const path = membersPath(ws.workspaceId)
        const guest = (yield* asApp(app, path, "PUT", {
          email: email("guest"),
          workspace_role: "guest",
          profiles: [{ profile_id: ws.secondProfileId, profile_role: "viewer" }]
        })).json.data
        const analyst = (yield* asApp(app, path, "PUT", { email: email("analyst"), workspace_role: "analyst" })).json.data
        const guestCookie = yield* sessionFor(guest.user_id)
        const analystCookie = yield* sessionFor(analyst.user_id)

        assert.strictEqual(yield* connectionsStatus(guestCookie, ws.secondProfileId), 200)
        assert.strictEqual(yield* connectionsStatus(guestCookie, ws.profileId), 404)
        assert.strictEqual(yield* connectionsStatus(analystCookie, ws.profileId), 200)
        assert.strictEqual(yield* connectionsStatus(analystCookie, ws.secondProfileId), 200)

        // Replacing the guest's access moves what it reaches.
        yield* asApp(app, path, "PUT", {
          email: guest.email,
          workspace_role: "guest",
          profiles: [{ profile_id: ws.profileId, profile_role: "viewer" }]
        })
        assert.strictEqual(yield* connectionsStatus(guestCookie, ws.profileId), 200)
        assert.strictEqual(yield* connectionsStatus(guestCookie, ws.secondProfileId), 404)

        yield* asApp(app, `${path}/${guest.user_id}`, "DELETE")
        yield* asApp(app, `${path}/${analyst.user_id}`, "DELETE")
        assert.strictEqual(yield* connectionsStatus(guestCookie, ws.profileId), 404)
        assert.strictEqual(yield* connectionsStatus(analystCookie, ws.profileId), 404)
      }))
  })
})
