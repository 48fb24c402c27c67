import { assert, describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CURRENT_BAA_VERSION, CURRENT_DPA_VERSION } from "../../schema/dpa.ts"
import { DpaService } from "../../src/accounts/dpa/service.ts"
import { call, OPERATOR_TOKEN, serveApp, testSettings, withoutRequestId } from "../support/app.ts"
import { asApp, type PartnerApp, registerApp } from "../support/partner.ts"
import { seedApiKey, seedMemberSession, seedProfile, type SeededProfile } from "../support/tenancy.ts"

type Session = Effect.Success<ReturnType<typeof seedMemberSession>>

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/

const post = (path: string, session: Session, body?: unknown) =>
  call(path, {
    method: "POST",
    headers: { ...session.headers, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const get = (path: string, headers: Record<string, string>) => call(path, { headers })

const operator = { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" }

/** An app whose owner workspace is a fresh workspace, with an admin session there. */
const appWithOwner = Effect.fn("test.appWithOwner")(function*(role: "owner" | "admin" = "admin") {
  const app = yield* registerApp("DPA partner")
  const ownerWorkspace = yield* seedProfile({ name: "Partner's own workspace" })
  const patched = yield* call(`/api/v1/admin/oauth-apps/${app.id}`, {
    method: "PATCH",
    headers: operator,
    body: JSON.stringify({ owner_workspace_id: ownerWorkspace.workspaceId })
  })
  assert.strictEqual(patched.status, 200)
  const manager = yield* seedMemberSession(ownerWorkspace, role)
  return { app, ownerWorkspace, manager }
})

const provision = (app: PartnerApp, body: Record<string, unknown> = {}) =>
  Effect.map(
    asApp(app, "/api/v1/profiles", "POST", { external_ref: `m-${crypto.randomUUID().slice(0, 8)}`, ...body }),
    (response) => {
      assert.strictEqual(response.status, 201, response.text)
      return { profileId: String(response.json.data.profile_id), workspaceId: String(response.json.data.workspace_id) } satisfies SeededProfile
    }
  )

const appDpa = (app: PartnerApp) => `/api/v1/oauth-apps/${app.id}/dpa`
const profileDpa = (profile: SeededProfile) => `/api/v1/profiles/${profile.profileId}/dpa`

const audits = (targetId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ action: string; actor_user_id: string | null; details: { level: string; version: string | null } }>`
      SELECT action, actor_user_id, details FROM audit_events WHERE target_id = ${targetId} AND action LIKE '%a.%'
      ORDER BY occurred_at, id`)

const storedApp = (appId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<{ dpa_status: string; dpa_version: string | null; dpa_accepted_by: string | null; accepted: boolean }>`
        SELECT dpa_status, dpa_version, dpa_accepted_by, dpa_accepted_at IS NOT NULL AS accepted FROM oauth_apps WHERE id = ${appId}`,
      (rows) => rows[0]
    ))

const storedProfile = (profileId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    Effect.map(
      sql<{ dpa_status: string; dpa_version: string | null; baa_status: string }>`
        SELECT dpa_status, dpa_version, baa_status FROM profiles WHERE id = ${profileId}`,
      (rows) => rows[0]
    ))

layer(serveApp(testSettings()), { timeout: "90 seconds", excludeTestServices: true })("DPA status", (it) => {
  describe("app level (the DPA table)", () => {
    it.effect("not_accepted -> accepted: every profile the app provisioned, and every later one, reads accepted", () =>
      Effect.gen(function*() {
        const { app, manager } = yield* appWithOwner()
        const before = yield* provision(app)

        const initial = yield* get(appDpa(app), { cookie: manager.cookie })
        assert.strictEqual(initial.status, 200)
        assert.deepStrictEqual(initial.json.data, {
          app_id: app.id,
          owner_workspace_id: initial.json.data.owner_workspace_id,
          dpa_status: "not_accepted",
          dpa_version: null,
          dpa_accepted_at: null,
          dpa_accepted_by: null,
          current_version: CURRENT_DPA_VERSION
        })
        const unread = yield* asApp(app, profileDpa(before), "GET")
        assert.strictEqual(unread.status, 200)
        assert.strictEqual(unread.json.data.dpa_status, "not_accepted")
        assert.strictEqual(unread.json.data.dpa_source, "none")

        const wrongVersion = yield* post(`${appDpa(app)}/accept`, manager, { version: "2020-01-01.dpa.v0" })
        assert.strictEqual(wrongVersion.status, 400)
        assert.strictEqual(wrongVersion.json.error.code, "validation_error")
        assert.include(wrongVersion.json.error.message, CURRENT_DPA_VERSION)
        assert.strictEqual((yield* storedApp(app.id))?.dpa_status, "not_accepted")

        const accepted = yield* post(`${appDpa(app)}/accept`, manager, { version: CURRENT_DPA_VERSION })
        assert.strictEqual(accepted.status, 200)
        assert.strictEqual(accepted.json.data.changed, true)
        assert.strictEqual(accepted.json.data.dpa_status, "accepted")
        assert.strictEqual(accepted.json.data.dpa_version, CURRENT_DPA_VERSION)
        assert.strictEqual(accepted.json.data.dpa_accepted_by, manager.userId)
        assert.match(accepted.json.data.dpa_accepted_at, ISO)
        assert.deepStrictEqual(yield* storedApp(app.id), {
          dpa_status: "accepted",
          dpa_version: CURRENT_DPA_VERSION,
          dpa_accepted_by: manager.userId,
          accepted: true
        })
        assert.deepStrictEqual((yield* audits(app.id)).map((row) => [row.action, row.actor_user_id, row.details.level]), [
          ["dpa.accepted", manager.userId, "app"]
        ])

        // Same state: a no-op answering 200 changed: false, no audit event.
        const again = yield* post(`${appDpa(app)}/accept`, manager, { version: CURRENT_DPA_VERSION })
        assert.strictEqual(again.status, 200)
        assert.strictEqual(again.json.data.changed, false)
        assert.strictEqual(again.json.data.dpa_accepted_at, accepted.json.data.dpa_accepted_at)
        assert.strictEqual((yield* audits(app.id)).length, 1)

        const later = yield* provision(app)
        for (const profile of [before, later]) {
          const read = yield* asApp(app, profileDpa(profile), "GET")
          assert.strictEqual(read.status, 200)
          assert.strictEqual(read.json.data.dpa_status, "accepted")
          assert.strictEqual(read.json.data.dpa_version, CURRENT_DPA_VERSION)
          assert.strictEqual(read.json.data.dpa_accepted_by, manager.userId)
          assert.strictEqual(read.json.data.dpa_accepted_at, accepted.json.data.dpa_accepted_at)
          assert.strictEqual(read.json.data.dpa_source, "app")
          assert.strictEqual(read.json.data.provisioned_by_app_id, app.id)
          assert.strictEqual(read.json.data.own_dpa.status, "not_accepted")
          // Computed at read time: nothing was copied to the profile row.
          assert.strictEqual((yield* storedProfile(profile.profileId))?.dpa_status, "not_accepted")
        }

        // The operator's read of the app shows the same read-only fields.
        const adminRead = yield* call(`/api/v1/admin/oauth-apps/${app.id}`, { headers: operator })
        assert.strictEqual(adminRead.json.data.dpa_status, "accepted")
        assert.strictEqual(adminRead.json.data.dpa_version, CURRENT_DPA_VERSION)
        assert.strictEqual(adminRead.json.data.dpa_accepted_by, manager.userId)
      }))

    it.effect("accepted -> withdrawn: inherited profiles read withdrawn; a profile whose own owner accepted keeps it", () =>
      Effect.gen(function*() {
        const { app, manager } = yield* appWithOwner("owner")
        const inherited = yield* provision(app)
        const ownAccepted = yield* provision(app)
        const merchantOwner = yield* seedMemberSession(ownAccepted, "owner")
        assert.strictEqual((yield* post(`${appDpa(app)}/accept`, manager, { version: CURRENT_DPA_VERSION })).status, 200)
        const own = yield* post(`${profileDpa(ownAccepted)}/accept`, merchantOwner, { version: CURRENT_DPA_VERSION })
        assert.strictEqual(own.status, 200)
        assert.strictEqual(own.json.data.changed, true)
        assert.strictEqual(own.json.data.dpa_source, "profile")

        const withdrawn = yield* post(`${appDpa(app)}/withdraw`, manager)
        assert.strictEqual(withdrawn.status, 200)
        assert.strictEqual(withdrawn.json.data.changed, true)
        assert.strictEqual(withdrawn.json.data.dpa_status, "withdrawn")
        assert.strictEqual((yield* storedApp(app.id))?.dpa_status, "withdrawn")
        assert.deepStrictEqual((yield* audits(app.id)).map((row) => row.action), ["dpa.accepted", "dpa.withdrawn"])

        const inheritedRead = yield* asApp(app, profileDpa(inherited), "GET")
        assert.strictEqual(inheritedRead.json.data.dpa_status, "withdrawn")
        assert.strictEqual(inheritedRead.json.data.dpa_source, "app")
        const ownRead = yield* asApp(app, profileDpa(ownAccepted), "GET")
        assert.strictEqual(ownRead.json.data.dpa_status, "accepted")
        assert.strictEqual(ownRead.json.data.dpa_source, "profile")
        assert.strictEqual(ownRead.json.data.dpa_accepted_by, merchantOwner.userId)
        assert.strictEqual(ownRead.json.data.dpa_version, CURRENT_DPA_VERSION)

        const again = yield* post(`${appDpa(app)}/withdraw`, manager)
        assert.strictEqual(again.status, 200)
        assert.strictEqual(again.json.data.changed, false)
        assert.strictEqual((yield* audits(app.id)).length, 2)

        // Re-acceptance after a withdrawal is allowed (decision 0024).
        const reaccepted = yield* post(`${appDpa(app)}/accept`, manager, { version: CURRENT_DPA_VERSION })
        assert.strictEqual(reaccepted.json.data.changed, true)
        assert.strictEqual(reaccepted.json.data.dpa_status, "accepted")
        assert.strictEqual((yield* asApp(app, profileDpa(inherited), "GET")).json.data.dpa_status, "accepted")
      }))

    it.effect("withdrawing a DPA never accepted is 409 invalid_state, nothing written", () =>
      Effect.gen(function*() {
        const { app, manager } = yield* appWithOwner()
        const refused = yield* post(`${appDpa(app)}/withdraw`, manager)
        assert.strictEqual(refused.status, 409)
        assert.strictEqual(refused.json.error.code, "invalid_state")
        assert.strictEqual(refused.json.error.reason, "dpa_not_accepted")
        assert.strictEqual((yield* storedApp(app.id))?.dpa_status, "not_accepted")
        assert.strictEqual((yield* audits(app.id)).length, 0)
      }))

    it.effect("anyone but an owner or admin of the owner workspace gets one identical 404", () =>
      Effect.gen(function*() {
        const { app, ownerWorkspace, manager } = yield* appWithOwner()
        const analyst = yield* seedMemberSession(ownerWorkspace, "analyst")
        const stranger = yield* seedMemberSession(yield* seedProfile(), "owner")
        const orphan = yield* registerApp("No owner workspace")
        const deleted = yield* appWithOwner()
        yield* call(`/api/v1/admin/oauth-apps/${deleted.app.id}`, { method: "DELETE", headers: operator })
        const removed = yield* seedMemberSession(ownerWorkspace, "admin")
        yield* Effect.flatMap(SqlClient, (sql) =>
          sql`UPDATE workspace_memberships SET removed_at = now() WHERE user_id = ${removed.userId}`)

        const reference = yield* post(`/api/v1/oauth-apps/${crypto.randomUUID()}/dpa/accept`, manager, { version: CURRENT_DPA_VERSION })
        assert.strictEqual(reference.status, 404)
        assert.strictEqual(reference.json.error.code, "not_found")
        const attempts = [
          yield* post(`${appDpa(app)}/accept`, analyst, { version: CURRENT_DPA_VERSION }),
          yield* post(`${appDpa(app)}/accept`, stranger, { version: CURRENT_DPA_VERSION }),
          yield* post(`${appDpa(app)}/accept`, removed, { version: CURRENT_DPA_VERSION }),
          yield* post(`${appDpa(orphan)}/accept`, manager, { version: CURRENT_DPA_VERSION }),
          yield* post(`${appDpa(deleted.app)}/accept`, deleted.manager, { version: CURRENT_DPA_VERSION }),
          yield* post("/api/v1/oauth-apps/not-a-uuid/dpa/accept", manager, { version: CURRENT_DPA_VERSION }),
          yield* post(`${appDpa(app)}/withdraw`, analyst),
          yield* get(appDpa(app), { cookie: analyst.cookie })
        ]
        for (const attempt of attempts) {
          assert.strictEqual(attempt.status, 404)
          assert.strictEqual(withoutRequestId(attempt.text), withoutRequestId(reference.text))
        }
        assert.strictEqual((yield* storedApp(app.id))?.dpa_status, "not_accepted")
      }))

    it.effect("an API key, a user token and an app credential never accept: 403 insufficient_scope", () =>
      Effect.gen(function*() {
        const { app, ownerWorkspace, manager } = yield* appWithOwner()
        const profile = yield* provision(app)
        const key = yield* seedApiKey(ownerWorkspace, { scopes: ["analytics:read"] })
        const minted = yield* post("/api/v1/me/mcp-tokens", manager, { grants: ["mcp:read", "mcp:write"] })
        assert.strictEqual(minted.status, 201)
        const credentials = [`Bearer ${key.key}`, `Bearer ${minted.json.data.token}`, app.basic]
        for (const authorization of credentials) {
          for (const path of [`${appDpa(app)}/accept`, `${profileDpa(profile)}/accept`, `/api/v1/profiles/${profile.profileId}/baa/accept`]) {
            const refused = yield* call(path, {
              method: "POST",
              headers: { authorization, "content-type": "application/json" },
              body: JSON.stringify({ version: CURRENT_DPA_VERSION })
            })
            assert.strictEqual(refused.status, 403, `${path} ${authorization.slice(0, 12)}`)
            assert.strictEqual(refused.json.error.code, "insufficient_scope")
            assert.strictEqual(refused.json.error.reason, "credential_kind_not_accepted")
          }
          const withdraw = yield* call(`${appDpa(app)}/withdraw`, { method: "POST", headers: { authorization } })
          assert.strictEqual(withdraw.status, 403)
        }
        assert.strictEqual((yield* storedApp(app.id))?.dpa_status, "not_accepted")
        assert.strictEqual((yield* storedProfile(profile.profileId))?.dpa_status, "not_accepted")
      }))

    it.effect("a session POST without its CSRF token is 403 (reason csrf) and changes nothing", () =>
      Effect.gen(function*() {
        const { app, manager } = yield* appWithOwner()
        const profile = yield* provision(app)
        const owner = yield* seedMemberSession(profile, "owner")
        const cases = [
          { path: `${appDpa(app)}/accept`, session: manager },
          { path: `${profileDpa(profile)}/accept`, session: owner },
          { path: `/api/v1/profiles/${profile.profileId}/baa/accept`, session: owner }
        ]
        for (const { path, session } of cases) {
          for (const headers of [{ cookie: session.cookie }, { cookie: session.cookie, "x-csrf-token": "wrong" }]) {
            const refused = yield* call(path, {
              method: "POST",
              headers: { ...headers, "content-type": "application/json" },
              body: JSON.stringify({ version: CURRENT_DPA_VERSION })
            })
            assert.strictEqual(refused.status, 403)
            assert.strictEqual(refused.json.error.code, "insufficient_scope")
            assert.strictEqual(refused.json.error.reason, "csrf")
          }
        }
        assert.strictEqual((yield* storedApp(app.id))?.dpa_status, "not_accepted")
        assert.deepStrictEqual(yield* storedProfile(profile.profileId), {
          dpa_status: "not_accepted",
          dpa_version: null,
          baa_status: "not_accepted"
        })
      }))
  })

  describe("profile level", () => {
    it.effect("a profile the app did not provision: its owner accepts and withdraws; an analyst reads but may not act", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const owner = yield* seedMemberSession(profile, "owner")
        const analyst = yield* seedMemberSession(profile, "analyst")
        const guest = yield* seedMemberSession(profile, "guest")

        const read = yield* get(profileDpa(profile), { cookie: analyst.cookie })
        assert.strictEqual(read.status, 200)
        assert.deepStrictEqual(read.json.data, {
          profile_id: profile.profileId,
          workspace_id: profile.workspaceId,
          privacy_mode: "standard",
          dpa_status: "not_accepted",
          dpa_version: null,
          dpa_accepted_at: null,
          dpa_accepted_by: null,
          dpa_source: "none",
          provisioned_by_app_id: null,
          own_dpa: { status: "not_accepted", version: null, accepted_at: null, accepted_by: null },
          baa_status: "not_accepted",
          baa_version: null,
          baa_accepted_at: null,
          baa_accepted_by: null,
          current_dpa_version: CURRENT_DPA_VERSION,
          current_baa_version: CURRENT_BAA_VERSION,
          export_hold: null
        })

        const byAnalyst = yield* post(`${profileDpa(profile)}/accept`, analyst, { version: CURRENT_DPA_VERSION })
        assert.strictEqual(byAnalyst.status, 403)
        assert.strictEqual(byAnalyst.json.error.code, "insufficient_scope")
        assert.strictEqual(byAnalyst.json.error.reason, "workspace_role")
        // A guest without a membership of the profile cannot reach it at all.
        const byGuest = yield* post(`${profileDpa(profile)}/accept`, guest, { version: CURRENT_DPA_VERSION })
        assert.strictEqual(byGuest.status, 404)
        assert.strictEqual((yield* get(profileDpa(profile), { cookie: guest.cookie })).status, 404)

        const withdrawNothing = yield* post(`${profileDpa(profile)}/withdraw`, owner)
        assert.strictEqual(withdrawNothing.status, 409)
        assert.strictEqual(withdrawNothing.json.error.reason, "dpa_not_accepted")

        const accepted = yield* post(`${profileDpa(profile)}/accept`, owner, { version: CURRENT_DPA_VERSION })
        assert.strictEqual(accepted.status, 200)
        assert.strictEqual(accepted.json.data.changed, true)
        assert.strictEqual(accepted.json.data.dpa_status, "accepted")
        assert.strictEqual(accepted.json.data.dpa_source, "profile")
        assert.strictEqual(accepted.json.data.dpa_accepted_by, owner.userId)
        assert.deepStrictEqual(yield* storedProfile(profile.profileId), {
          dpa_status: "accepted",
          dpa_version: CURRENT_DPA_VERSION,
          baa_status: "not_accepted"
        })
        const withdrawn = yield* post(`${profileDpa(profile)}/withdraw`, owner)
        assert.strictEqual(withdrawn.json.data.changed, true)
        assert.strictEqual(withdrawn.json.data.dpa_status, "withdrawn")
        assert.strictEqual(withdrawn.json.data.dpa_source, "profile")
        assert.deepStrictEqual((yield* audits(profile.profileId)).map((row) => row.action), ["dpa.accepted", "dpa.withdrawn"])
      }))

    it.effect("GET: an API key of the profile and the provisioning app read it; other keys, apps and archived profiles get 404", () =>
      Effect.gen(function*() {
        const { app } = yield* appWithOwner()
        const other = yield* registerApp("Another partner")
        const profile = yield* provision(app)
        const otherProfile = yield* seedProfile()
        const own = yield* seedApiKey(profile, { scopes: ["analytics:read"] })
        const foreign = yield* seedApiKey(otherProfile, { scopes: ["analytics:read"] })

        const byKey = yield* get(profileDpa(profile), { authorization: `Bearer ${own.key}` })
        assert.strictEqual(byKey.status, 200)
        assert.strictEqual(byKey.json.data.profile_id, profile.profileId)
        assert.strictEqual((yield* asApp(app, profileDpa(profile), "GET")).status, 200)

        const reference = yield* get(`/api/v1/profiles/${crypto.randomUUID()}/dpa`, { authorization: `Bearer ${own.key}` })
        assert.strictEqual(reference.status, 404)
        for (const answer of [
          yield* get(profileDpa(profile), { authorization: `Bearer ${foreign.key}` }),
          yield* asApp(other, profileDpa(profile), "GET"),
          yield* asApp(app, profileDpa(otherProfile), "GET")
        ]) {
          assert.strictEqual(answer.status, 404)
          assert.strictEqual(withoutRequestId(answer.text), withoutRequestId(reference.text))
        }
        const archived = yield* asApp(app, `/api/v1/profiles/${profile.profileId}`, "DELETE")
        assert.strictEqual(archived.status, 200)
        assert.strictEqual((yield* asApp(app, profileDpa(profile), "GET")).status, 404)
      }))

    it.effect("BAA: accept with the current version, withdraw; another version is 400", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const admin = yield* seedMemberSession(profile, "admin")
        const baa = `/api/v1/profiles/${profile.profileId}/baa`
        const wrong = yield* post(`${baa}/accept`, admin, { version: CURRENT_DPA_VERSION })
        assert.strictEqual(wrong.status, 400)
        assert.strictEqual(wrong.json.error.code, "validation_error")
        const accepted = yield* post(`${baa}/accept`, admin, { version: CURRENT_BAA_VERSION })
        assert.strictEqual(accepted.status, 200)
        assert.strictEqual(accepted.json.data.changed, true)
        assert.strictEqual(accepted.json.data.baa_status, "accepted")
        assert.strictEqual(accepted.json.data.baa_version, CURRENT_BAA_VERSION)
        assert.strictEqual(accepted.json.data.baa_accepted_by, admin.userId)
        assert.strictEqual(accepted.json.data.dpa_status, "not_accepted")
        const again = yield* post(`${baa}/accept`, admin, { version: CURRENT_BAA_VERSION })
        assert.strictEqual(again.json.data.changed, false)
        const withdrawn = yield* post(`${baa}/withdraw`, admin)
        assert.strictEqual(withdrawn.json.data.changed, true)
        assert.strictEqual(withdrawn.json.data.baa_status, "withdrawn")
        assert.strictEqual((yield* storedProfile(profile.profileId))?.baa_status, "withdrawn")
        assert.deepStrictEqual((yield* audits(profile.profileId)).map((row) => row.action), ["baa.accepted", "baa.withdrawn"])
      }))
  })

  describe("exportHold", () => {
    it.effect("platform_safe needs an accepted DPA (own or inherited), hipaa an accepted BAA, standard nothing", () =>
      Effect.gen(function*() {
        const dpa = yield* DpaService
        const { app, manager } = yield* appWithOwner()
        const platformSafe = yield* provision(app, { privacy_mode: "platform_safe" })
        const hipaa = yield* provision(app, { privacy_mode: "hipaa" })
        const standard = yield* provision(app)
        const own = yield* seedProfile()
        yield* Effect.flatMap(SqlClient, (sql) => sql`UPDATE profiles SET privacy_mode = 'platform_safe' WHERE id = ${own.profileId}`)

        assert.deepStrictEqual(yield* dpa.exportHold(platformSafe.profileId), Option.some("dpa_not_accepted" as const))
        assert.deepStrictEqual(yield* dpa.exportHold(hipaa.profileId), Option.some("baa_not_accepted" as const))
        assert.deepStrictEqual(yield* dpa.exportHold(standard.profileId), Option.none())
        assert.deepStrictEqual(yield* dpa.exportHold(own.profileId), Option.some("dpa_not_accepted" as const))
        const read = yield* asApp(app, profileDpa(platformSafe), "GET")
        assert.strictEqual(read.json.data.export_hold, "dpa_not_accepted")

        yield* post(`${appDpa(app)}/accept`, manager, { version: CURRENT_DPA_VERSION })
        assert.deepStrictEqual(yield* dpa.exportHold(platformSafe.profileId), Option.none())
        // The app's DPA does not stand in for the BAA, nor for a profile it did not provision.
        assert.deepStrictEqual(yield* dpa.exportHold(hipaa.profileId), Option.some("baa_not_accepted" as const))
        assert.deepStrictEqual(yield* dpa.exportHold(own.profileId), Option.some("dpa_not_accepted" as const))

        const hipaaOwner = yield* seedMemberSession(hipaa, "owner")
        yield* post(`/api/v1/profiles/${hipaa.profileId}/baa/accept`, hipaaOwner, { version: CURRENT_BAA_VERSION })
        assert.deepStrictEqual(yield* dpa.exportHold(hipaa.profileId), Option.none())
        const ownOwner = yield* seedMemberSession(own, "owner")
        yield* post(`${profileDpa(own)}/accept`, ownOwner, { version: CURRENT_DPA_VERSION })
        assert.deepStrictEqual(yield* dpa.exportHold(own.profileId), Option.none())

        yield* post(`${appDpa(app)}/withdraw`, manager)
        assert.deepStrictEqual(yield* dpa.exportHold(platformSafe.profileId), Option.some("dpa_not_accepted" as const))

        const unknown = yield* Effect.flip(dpa.exportHold(crypto.randomUUID()))
        assert.strictEqual(unknown._tag, "NotFound")
      }).pipe(Effect.provide(DpaService.layer)))
  })
})
