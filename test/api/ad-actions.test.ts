/**
 * Ad actions (issue 19; api-endpoints.md "Ad actions", api-concepts.md state table and action
 * ledger; decisions 0068-0070) end to end: the real app, the sandbox ad platform it serves
 * itself, an ad account connected through a connect hand-off. Each test gets a fresh generated
 * account (the sandbox lists it first, so the next consent reaches it) so tests do not share
 * objects. What reached the platform is read from the sandbox's `_state` (`write_count`, the
 * objects) and compared with the ledger (`ad_actions`) and the audit log.
 *
 * A generated account of 120 ads: campaign 1 owns a 10,000 daily budget (10 ad sets of 10 ads);
 * campaign 2 has no budget of its own: its ad set 1 runs on a daily budget, ad set 2 on a
 * lifetime budget of 100,000.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { serveAppOnOwnPort } from "../support/providers.ts"
import { seedApiKey, seedMemberSession, seedProfile } from "../support/tenancy.ts"
import {
  adFixture as fixture,
  clearFaults,
  connectFresh,
  objectOf,
  patchObjects,
  send,
  sandboxState,
  setFaults,
  WRITE_SCOPES as SCOPES,
  writeCount
} from "../support/adplatform.ts"

const ledger = (profileId: string, objectId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<any>`SELECT id, action, state, reason_code, applied_by, applied_by_basis, pre_status,
                    pre_daily_budget_minor::float8 AS pre_daily, written_status,
                    written_daily_budget_minor::float8 AS written_daily, written_lifetime_budget_minor::float8 AS written_lifetime,
                    rollback_of, affected_ads_count
             FROM ad_actions WHERE profile_id = ${profileId} AND object_id = ${objectId}
             ORDER BY created_at, id`)

const audits = (profileId: string, targetId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<any>`SELECT action, details FROM audit_events WHERE profile_id = ${profileId} AND target_id = ${targetId}
             AND action LIKE 'ad_action.%' ORDER BY occurred_at, id`)

layer(serveAppOnOwnPort(), { timeout: "180 seconds", excludeTestServices: true })("ad actions", (it) => {
  describe("POST /api/v1/ads/{id}/pause and /resume", () => {
    it.effect("a pause writes once with a ledger entry and its undo; a second pause is no_change with no write; resume restores", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const ad = `ad_${f.n}_2_1_1`
        const before = yield* writeCount(f.key)
        const paused = yield* send(f.key, "POST", `/api/v1/ads/${ad}/pause`)
        assert.strictEqual(paused.status, 200, paused.text)
        assert.deepStrictEqual(Object.keys(paused.json), ["data"])
        assert.strictEqual(paused.json.data.outcome, "applied")
        assert.strictEqual(paused.json.data.status, "paused")
        assert.strictEqual(paused.json.data.pre_state.status, "active")
        assert.strictEqual(paused.json.data.rollback_of, null)
        assert.deepStrictEqual(paused.json.data.undo, { method: "POST", path: `/api/v1/ads/${ad}/resume` })
        assert.strictEqual((yield* objectOf(f.key, ad)).status, "paused")
        assert.strictEqual(yield* writeCount(f.key), before + 1)

        const again = yield* send(f.key, "POST", `/api/v1/ads/${ad}/pause`)
        assert.strictEqual(again.status, 200, again.text)
        assert.strictEqual(again.json.data.outcome, "no_change")
        assert.strictEqual(again.json.data.undo, null)
        assert.strictEqual(yield* writeCount(f.key), before + 1)

        const resumed = yield* send(f.key, "POST", `/api/v1/ads/${ad}/resume`)
        assert.strictEqual(resumed.json.data.outcome, "applied", resumed.text)
        assert.strictEqual((yield* objectOf(f.key, ad)).status, "active")
        assert.strictEqual(yield* writeCount(f.key), before + 2)

        const rows = yield* ledger(f.profileId, ad)
        assert.deepStrictEqual(rows.map((r) => [r.action, r.state, r.written_status]), [
          ["pause", "applied", "paused"],
          ["pause", "no_change", null],
          ["resume", "applied", "active"]
        ])
        assert.strictEqual(rows[0].id, paused.json.data.action_id)
        // One audit row per attempt.
        assert.strictEqual((yield* audits(f.profileId, ad)).length, 3)
      }))

    it.effect("an archived ad is 409 invalid_state and nothing is written; an unknown ad is 404", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const ad = `ad_${f.n}_2_1_2`
        yield* patchObjects(f.key, [{ id: ad, status: "archived" }])
        const before = yield* writeCount(f.key)
        const refused = yield* send(f.key, "POST", `/api/v1/ads/${ad}/resume`)
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "invalid_state")
        assert.strictEqual(yield* writeCount(f.key), before)
        assert.strictEqual((yield* objectOf(f.key, ad)).status, "archived")
        assert.strictEqual((yield* ledger(f.profileId, ad)).length, 0)
        assert.strictEqual((yield* audits(f.profileId, ad)).length, 1, "the refused attempt is audited")

        const unknown = yield* send(f.key, "POST", `/api/v1/ads/ad_999999_1_1_1/pause`)
        assert.strictEqual(unknown.status, 404, unknown.text)
        assert.strictEqual(unknown.json.error.code, "not_found")
        assert.strictEqual(yield* writeCount(f.key), before)
      }))
  })

  describe("Idempotency-Key", () => {
    it.effect("required: without it 400 invalid_request naming the header, nothing written; a repeat replays without calling the platform; another body is 409 conflict", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const set = `as_${f.n}_2_1`
        const { userId } = yield* seedMemberSession(f, "owner")
        const live = (yield* objectOf(f.key, set)).daily_budget_minor as number
        const before = yield* writeCount(f.key)

        const missing = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: live + 100, applied_by: userId }, null)
        assert.strictEqual(missing.status, 400, missing.text)
        assert.strictEqual(missing.json.error.code, "invalid_request")
        assert.include(missing.json.error.message, "Idempotency-Key")
        assert.strictEqual(yield* writeCount(f.key), before)
        assert.strictEqual((yield* ledger(f.profileId, set)).length, 0)

        const key = crypto.randomUUID()
        const body = { new_daily_budget_minor: live + 100, applied_by: userId }
        const first = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, body, key)
        assert.strictEqual(first.status, 200, first.text)
        const replay = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, body, key)
        assert.strictEqual(replay.status, 200, replay.text)
        assert.strictEqual(replay.headers.get("idempotent-replayed"), "true")
        assert.deepStrictEqual(replay.json, first.json)
        assert.strictEqual(yield* writeCount(f.key), before + 1)

        const conflict = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { ...body, new_daily_budget_minor: live + 200 }, key)
        assert.strictEqual(conflict.status, 409, conflict.text)
        assert.strictEqual(conflict.json.error.code, "idempotency_key_conflict")
        assert.strictEqual(yield* writeCount(f.key), before + 1)
        assert.strictEqual((yield* objectOf(f.key, set)).daily_budget_minor, live + 100)
      }))
  })

  describe("POST /api/v1/adsets/{id}/budget", () => {
    it.effect("answers budget_type, previous and new budget and the basis; the person on record is checked", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const set = `as_${f.n}_2_1`
        const owner = yield* seedMemberSession(f, "owner")
        const analyst = yield* seedMemberSession(f, "analyst")
        const live = (yield* objectOf(f.key, set)).daily_budget_minor as number
        const before = yield* writeCount(f.key)

        const nobody = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: live + 10 })
        assert.strictEqual(nobody.status, 400, nobody.text)
        assert.strictEqual(nobody.json.error.code, "validation_error")
        const notAdmin = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: live + 10, applied_by: analyst.userId })
        assert.strictEqual(notAdmin.status, 422, notAdmin.text)
        assert.strictEqual(notAdmin.json.error.code, "validation_error")
        const both = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, {
          new_daily_budget_minor: live + 10,
          new_lifetime_budget_minor: live + 10,
          applied_by: owner.userId
        })
        assert.strictEqual(both.status, 400, both.text)
        assert.strictEqual(yield* writeCount(f.key), before)
        // A refused person on a resolved connection is an audited attempt; a malformed body is not an attempt.
        assert.deepStrictEqual((yield* audits(f.profileId, set)).map((a) => a.details.refused), ["ValidationError", "ValidationError"])

        const changed = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: live + 500, applied_by: owner.userId })
        assert.strictEqual(changed.status, 200, changed.text)
        assert.deepStrictEqual(Object.keys(changed.json), ["data"])
        assert.strictEqual(changed.json.data.budget_type, "daily")
        assert.strictEqual(changed.json.data.previous_budget_minor, live)
        assert.strictEqual(changed.json.data.budget_minor, live + 500)
        assert.strictEqual(changed.json.data.applied_by_basis, "applied_by")
        assert.strictEqual(changed.json.data.applied_by, owner.userId)
        assert.strictEqual(changed.json.data.pre_state.daily_budget_minor, live)
        assert.strictEqual((yield* objectOf(f.key, set)).daily_budget_minor, live + 500)

        // A signed-in person is the person on record.
        const ownerSession = yield* call(`/api/v1/adsets/${set}/budget?profile_id=${f.profileId}`, {
          method: "POST",
          headers: { ...owner.headers, "content-type": "application/json", "idempotency-key": crypto.randomUUID() },
          body: JSON.stringify({ new_daily_budget_minor: live + 700 })
        })
        assert.strictEqual(ownerSession.status, 200, ownerSession.text)
        assert.strictEqual(ownerSession.json.data.applied_by_basis, "person")
        assert.strictEqual(ownerSession.json.data.applied_by, owner.userId)
        assert.strictEqual(ownerSession.json.data.previous_budget_minor, live + 500)
      }))

    it.effect("a key minted by the provisioning app records the workspace's active owner (app_shadow_owner) when applied_by is absent", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const f = yield* fixture()
        const set = `as_${f.n}_2_1`
        const app = yield* registerApp("Ad actions provisioning app")
        const { id, key } = yield* seedApiKey(f, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
        yield* sql`UPDATE api_keys SET oauth_app_id = ${app.id} WHERE id = ${id}`
        const noOwner = yield* send(key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: 2_100 })
        assert.strictEqual(noOwner.status, 422, noOwner.text)
        assert.strictEqual(noOwner.json.error.code, "validation_error")
        const owner = yield* seedMemberSession(f, "owner")
        const live = (yield* objectOf(f.key, set)).daily_budget_minor as number
        const changed = yield* send(key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: live + 100 })
        assert.strictEqual(changed.status, 200, changed.text)
        assert.deepStrictEqual(Object.keys(changed.json), ["data"])
        assert.strictEqual(changed.json.data.applied_by_basis, "app_shadow_owner")
        assert.strictEqual(changed.json.data.applied_by, owner.userId)
        const [row] = yield* ledger(f.profileId, set)
        assert.strictEqual(row.applied_by, owner.userId)
        assert.strictEqual(row.applied_by_basis, "app_shadow_owner")
      }))

    it.effect("outside +/-50 % or below the floor: 422 budget_change_out_of_bounds and nothing reaches the platform; the platform's own minimum is 422 validation_error", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const set = `as_${f.n}_2_1`
        const { userId } = yield* seedMemberSession(f, "admin")
        yield* patchObjects(f.key, [{ id: set, daily_budget_minor: 600 }])
        const before = yield* writeCount(f.key)
        for (const value of [901, 299, 99]) {
          const refused = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: value, applied_by: userId })
          assert.strictEqual(refused.status, 422, `${value}: ${refused.text}`)
          assert.strictEqual(refused.json.error.code, "budget_change_out_of_bounds")
        }
        assert.strictEqual(yield* writeCount(f.key), before)
        const edge = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: 900, applied_by: userId })
        assert.strictEqual(edge.status, 200, edge.text)
        yield* patchObjects(f.key, [{ id: set, daily_budget_minor: 600 }])
        // 400 is within the service's bounds (floor 100, 300..900) but under the platform's minimum of 500.
        const platform = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: 400, applied_by: userId })
        assert.strictEqual(platform.status, 422, platform.text)
        assert.strictEqual(platform.json.error.code, "validation_error")
        assert.strictEqual((yield* objectOf(f.key, set)).daily_budget_minor, 600)
        const rows = yield* ledger(f.profileId, set)
        assert.deepStrictEqual(rows.map((r) => r.state), ["applied", "failed"])
      }))

    it.effect("an ad set whose campaign owns the budget, or a daily change on a lifetime budget, is 409 invalid_state; an archived one 409 adset_not_editable, audited", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const { userId } = yield* seedMemberSession(f, "owner")
        const before = yield* writeCount(f.key)
        const owned = yield* send(f.key, "POST", `/api/v1/adsets/as_${f.n}_1_1/budget`, { new_daily_budget_minor: 1_000, applied_by: userId })
        assert.strictEqual(owned.status, 409, owned.text)
        assert.strictEqual(owned.json.error.code, "invalid_state")
        const lifetime = yield* send(f.key, "POST", `/api/v1/adsets/as_${f.n}_2_2/budget`, { new_daily_budget_minor: 1_000, applied_by: userId })
        assert.strictEqual(lifetime.status, 409, lifetime.text)
        assert.strictEqual(lifetime.json.error.code, "invalid_state")
        const lifetimeOk = yield* send(f.key, "POST", `/api/v1/adsets/as_${f.n}_2_2/budget`, { new_lifetime_budget_minor: 120_000, applied_by: userId })
        assert.strictEqual(lifetimeOk.status, 200, lifetimeOk.text)
        assert.strictEqual(lifetimeOk.json.data.budget_type, "lifetime")
        assert.strictEqual((yield* objectOf(f.key, `as_${f.n}_2_2`)).lifetime_budget_minor, 120_000)

        const set = `as_${f.n}_2_1`
        yield* patchObjects(f.key, [{ id: set, status: "archived" }])
        const gone = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: 2_100, applied_by: userId })
        assert.strictEqual(gone.status, 409, gone.text)
        assert.strictEqual(gone.json.error.code, "adset_not_editable")
        assert.strictEqual(yield* writeCount(f.key), before + 1)
        const audited = yield* audits(f.profileId, set)
        assert.strictEqual(audited.length, 1)
        assert.strictEqual(audited[0].details.refused, "AdsetNotEditable")
      }))
  })

  describe("the synced copy", () => {
    it.effect("an ad set archived in the synced copy is 409 adset_not_editable when the platform cannot be read live, audited, nothing written", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const set = `as_${f.n}_2_1`
        const { userId } = yield* seedMemberSession(f, "owner")
        yield* patchObjects(f.key, [{ id: set, status: "archived" }])
        const queued = yield* send(f.key, "POST", "/api/v1/connections/sync", { connection_id: f.connectionId })
        assert.strictEqual(queued.status, 202, queued.text)
        const jobId: string = queued.json.data[0].job_id
        const job = yield* eventually(
          Effect.map(send(f.key, "GET", `/api/v1/connections/sync/${jobId}`, undefined, null), (r) => r.json.data),
          (j) => ["done", "failed", "cancelled"].includes(j.status),
          { what: `sync job ${jobId}`, within: "60 seconds", every: "200 millis" }
        )
        assert.strictEqual(job.status, "done", JSON.stringify(job))
        const before = yield* writeCount(f.key)
        yield* setFaults(f.key, { fail_next: 100 })
        const refused = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: 2_100, applied_by: userId })
        yield* clearFaults(f.key)
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "adset_not_editable")
        assert.strictEqual(yield* writeCount(f.key), before)
        assert.strictEqual((yield* ledger(f.profileId, set)).length, 0)
        assert.strictEqual((yield* audits(f.profileId, set)).length, 1)
      }))
  })

  describe("refusals before the platform is written", () => {
    it.effect("a connection without the manage-ads grant is 403 adplatform_write_permission_missing; a throttle 429 with Retry-After; an unreachable platform 502", () =>
      Effect.gen(function*() {
        const noGrant = yield* fixture("no_manage_ads_permission")
        const noGrantBefore = yield* writeCount(noGrant.key)
        const refused = yield* send(noGrant.key, "POST", `/api/v1/ads/ad_${noGrant.n}_2_1_1/pause`)
        assert.strictEqual(refused.status, 403, refused.text)
        assert.strictEqual(refused.json.error.code, "adplatform_write_permission_missing")
        assert.strictEqual(yield* writeCount(noGrant.key), noGrantBefore)
        assert.strictEqual((yield* audits(noGrant.profileId, `ad_${noGrant.n}_2_1_1`)).length, 1)

        // Each profile has its own sandbox world (decision 0109): this one's writes are counted in its own.
        const f = yield* fixture()
        const ad = `ad_${f.n}_2_1_1`
        const before = yield* writeCount(f.key)
        yield* setFaults(f.key, { throttle: 50 })
        const throttled = yield* send(f.key, "POST", `/api/v1/ads/${ad}/pause`)
        assert.strictEqual(throttled.status, 429, throttled.text)
        assert.strictEqual(throttled.json.error.code, "rate_limit_exceeded")
        assert.isNotNull(throttled.headers.get("retry-after"))
        yield* setFaults(f.key, { throttle: 0, fail_next: 50 })
        const down = yield* send(f.key, "POST", `/api/v1/ads/${ad}/pause`)
        assert.strictEqual(down.status, 502, down.text)
        assert.strictEqual(down.json.error.code, "adplatform_unavailable")
        yield* setFaults(f.key, { fail_next: 0, missing_permission: true })
        const revoked = yield* send(f.key, "POST", `/api/v1/ads/${ad}/pause`)
        assert.strictEqual(revoked.status, 403, revoked.text)
        assert.strictEqual(revoked.json.error.code, "adplatform_write_permission_missing")
        yield* clearFaults(f.key)
        assert.strictEqual((yield* objectOf(f.key, ad)).status, "active")
        assert.strictEqual(yield* writeCount(f.key), before)
      }))

    it.effect("a connection awaiting a reconnect is 409 adplatform_connection_required", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const f = yield* fixture()
        yield* sql`UPDATE connections SET status = 'reconnect_required' WHERE id = ${f.connectionId}`
        const refused = yield* send(f.key, "POST", `/api/v1/ads/ad_${f.n}_2_1_1/pause`)
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "adplatform_connection_required")
      }))

    it.effect("several usable connections and none named by the synced copy is 409 adplatform_connection_required, nothing written", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const second = yield* connectFresh(f)
        assert.notStrictEqual(second.connectionId, f.connectionId)
        const before = yield* writeCount(f.key)
        const refused = yield* send(f.key, "POST", `/api/v1/ads/ad_${second.n}_2_1_1/pause`)
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "adplatform_connection_required")
        assert.strictEqual(yield* writeCount(f.key), before)
        assert.strictEqual((yield* objectOf(f.key, `ad_${second.n}_2_1_1`)).status, "active")
      }))

    it.effect("on an app-provisioned profile with the add-on off, writes are 409 entitlement_required", () =>
      Effect.gen(function*() {
        const app = yield* registerApp("Ad actions app")
        const created = yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `m-${crypto.randomUUID().slice(0, 8)}` })
        assert.strictEqual(created.status, 201, created.text)
        const profile = { profileId: created.json.data.profile_id as string, workspaceId: created.json.data.workspace_id as string }
        const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
        const refused = yield* send(key, "POST", "/api/v1/ads/ad_1001_1_1_1/pause")
        assert.strictEqual(refused.status, 409, refused.text)
        assert.strictEqual(refused.json.error.code, "entitlement_required")
      }))
  })

  describe("without an ad-platform connection (decision 0110)", () => {
    const profileWrites = (profileId: string) =>
      Effect.flatMap(SqlClient, (sql) =>
        sql<{ ledger: number; audit: number }>`
          SELECT (SELECT count(*)::int FROM ad_actions WHERE profile_id = ${profileId}) AS ledger,
                 (SELECT count(*)::int FROM audit_events WHERE profile_id = ${profileId} AND action LIKE 'ad_action.%') AS audit`)

    /** Every ad, ad-set and campaign write, and the campaign status read, on the given ids. */
    const everyWrite = (ids: { ad: string; set: string; campaign: string; actionId: string }, appliedBy: string) =>
      [
        ["POST", `/api/v1/ads/${ids.ad}/pause`, undefined],
        ["POST", `/api/v1/ads/${ids.ad}/resume`, undefined],
        ["POST", `/api/v1/adsets/${ids.set}/budget`, { new_daily_budget_minor: 1_000, applied_by: appliedBy }],
        ["GET", `/api/v1/campaigns/${ids.campaign}/status`, undefined],
        ["POST", `/api/v1/campaigns/${ids.campaign}/pause`, undefined],
        ["POST", `/api/v1/campaigns/${ids.campaign}/resume`, undefined],
        ["POST", `/api/v1/campaigns/${ids.campaign}/budget`, { new_daily_budget_minor: 10_000, applied_by: appliedBy }],
        ["POST", `/api/v1/conversion-sync/actions/${ids.actionId}/rollback`, undefined]
      ] as const

    it.effect("after the connection is disconnected, every write (known or unknown id) is 409 adplatform_connection_required: no platform write, no ledger or audit row", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const { userId } = yield* seedMemberSession(f, "owner")
        const ad = `ad_${f.n}_2_1_1`
        const paused = yield* send(f.key, "POST", `/api/v1/ads/${ad}/pause`)
        assert.strictEqual(paused.status, 200, paused.text)
        const gone = yield* send(f.key, "POST", `/api/v1/connections/${f.connectionId}/disconnect`)
        assert.strictEqual(gone.status, 200, gone.text)

        const platformBefore = yield* sandboxState(f.key)
        const rowsBefore = (yield* profileWrites(f.profileId))[0]
        const known = { ad, set: `as_${f.n}_2_1`, campaign: `cmp_${f.n}_1`, actionId: paused.json.data.action_id as string }
        const unknown = { ad: "ad_999999_1_1_1", set: "as_999999_1_1", campaign: "cmp_999999_1", actionId: known.actionId }
        for (const [method, path, body] of [...everyWrite(known, userId), ...everyWrite(unknown, userId)]) {
          const answer = yield* send(f.key, method, path, body, method === "GET" ? null : undefined)
          assert.strictEqual(answer.status, 409, `${method} ${path}: ${answer.text}`)
          assert.strictEqual(answer.json.error.code, "adplatform_connection_required", `${method} ${path}`)
        }
        const platformAfter = yield* sandboxState(f.key)
        assert.strictEqual(platformAfter.write_count, platformBefore.write_count)
        assert.deepStrictEqual(platformAfter.accounts, platformBefore.accounts, "no object changed at the platform")
        assert.deepStrictEqual((yield* profileWrites(f.profileId))[0], rowsBefore, "no ledger row, no audit row")
        assert.strictEqual((yield* objectOf(f.key, ad)).status, "paused")
        // An action id the profile never had is still 404: the ledger is the service's own.
        const noAction = yield* send(f.key, "POST", `/api/v1/conversion-sync/actions/${crypto.randomUUID()}/rollback`)
        assert.strictEqual(noAction.status, 404, noAction.text)
        assert.strictEqual(noAction.json.error.code, "not_found")
      }))

    it.effect("a profile that never connected an ad account answers 409 adplatform_connection_required, not 404", () =>
      Effect.gen(function*() {
        const bare = yield* seedProfile()
        const { key } = yield* seedApiKey(bare, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
        const { userId } = yield* seedMemberSession(bare, "owner")
        const before = (yield* sandboxState(key)).write_count
        const ids = { ad: "ad_1001_2_1_1", set: "as_1001_2_1", campaign: "cmp_1001_1", actionId: crypto.randomUUID() }
        // The rollback of an unknown action is 404 before any connection is looked for; the rest are 409.
        for (const [method, path, body] of everyWrite(ids, userId).filter(([, path]) => !path.endsWith("/rollback"))) {
          const answer = yield* send(key, method, path, body, method === "GET" ? null : undefined)
          assert.strictEqual(answer.status, 409, `${method} ${path}: ${answer.text}`)
          assert.strictEqual(answer.json.error.code, "adplatform_connection_required", `${method} ${path}`)
        }
        assert.strictEqual((yield* sandboxState(key)).write_count, before)
        assert.deepStrictEqual((yield* profileWrites(bare.profileId))[0], { ledger: 0, audit: 0 })
      }))

    it.effect("with a connection, an unknown ad, ad set or campaign is still 404 not_found and nothing is written", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const { userId } = yield* seedMemberSession(f, "owner")
        const before = yield* writeCount(f.key)
        const ids = { ad: "ad_999999_1_1_1", set: "as_999999_1_1", campaign: "cmp_999999_1", actionId: crypto.randomUUID() }
        for (const [method, path, body] of everyWrite(ids, userId)) {
          const answer = yield* send(f.key, method, path, body, method === "GET" ? null : undefined)
          assert.strictEqual(answer.status, 404, `${method} ${path}: ${answer.text}`)
          assert.strictEqual(answer.json.error.code, "not_found", `${method} ${path}`)
        }
        assert.strictEqual(yield* writeCount(f.key), before)
        assert.strictEqual((yield* profileWrites(f.profileId))[0]!.ledger, 0)
      }))
  })

  describe("campaigns", () => {
    it.effect("status shows what a pause would stop and a confirm_token; a pause is one write; the resume undoes it and ads paused on their own stay paused", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const campaign = `cmp_${f.n}_2`
        const ownAd = `ad_${f.n}_2_1_3`
        yield* patchObjects(f.key, [{ id: ownAd, status: "paused" }])
        const status = yield* send(f.key, "GET", `/api/v1/campaigns/${campaign}/status`, undefined, null)
        assert.strictEqual(status.status, 200, status.text)
        assert.deepStrictEqual(Object.keys(status.json), ["data"])
        assert.strictEqual(status.json.data.status, "active")
        assert.strictEqual(status.json.data.ads_a_pause_would_stop.length, 19)
        assert.deepStrictEqual(status.json.data.actions.pause, { available: true, reason: null })
        assert.deepStrictEqual(status.json.data.actions.resume, { available: false, reason: "already_active" })
        assert.deepStrictEqual(status.json.data.actions.budget, { available: false, reason: "no_campaign_budget" })
        assert.match(status.json.data.confirm_token, /^ct_/)

        const before = yield* writeCount(f.key)
        const paused = yield* send(f.key, "POST", `/api/v1/campaigns/${campaign}/pause`, undefined, `${status.json.data.confirm_token}:pause`)
        assert.strictEqual(paused.status, 200, paused.text)
        assert.deepStrictEqual(Object.keys(paused.json), ["data"])
        assert.strictEqual(paused.json.data.affected_ads_count, 19)
        assert.deepStrictEqual(paused.json.data.undo, { method: "POST", path: `/api/v1/campaigns/${campaign}/resume` })
        assert.strictEqual(yield* writeCount(f.key), before + 1)
        const after = yield* send(f.key, "GET", `/api/v1/campaigns/${campaign}/status`, undefined, null)
        assert.notStrictEqual(after.json.data.confirm_token, status.json.data.confirm_token, "the token follows the live state")

        const resumed = yield* send(f.key, "POST", `/api/v1/campaigns/${campaign}/resume`)
        assert.strictEqual(resumed.status, 200, resumed.text)
        assert.deepStrictEqual(Object.keys(resumed.json), ["data"])
        assert.strictEqual(resumed.json.data.outcome, "applied")
        assert.strictEqual(resumed.json.data.rollback_of, paused.json.data.action_id)
        assert.strictEqual((yield* objectOf(f.key, campaign)).status, "active")
        assert.strictEqual((yield* objectOf(f.key, ownAd)).status, "paused")
        const again = yield* send(f.key, "POST", `/api/v1/campaigns/${campaign}/resume`)
        assert.strictEqual(again.json.data.outcome, "no_change", again.text)
        assert.strictEqual(yield* writeCount(f.key), before + 2)
      }))

    it.effect("a campaign budget: its own budget within +/-50 %; a campaign without one is 409 campaign_not_editable", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const { userId } = yield* seedMemberSession(f, "owner")
        const changed = yield* send(f.key, "POST", `/api/v1/campaigns/cmp_${f.n}_1/budget`, { new_daily_budget_minor: 14_000, applied_by: userId })
        assert.strictEqual(changed.status, 200, changed.text)
        assert.deepStrictEqual(Object.keys(changed.json), ["data"])
        assert.strictEqual(changed.json.data.previous_budget_minor, 10_000)
        assert.strictEqual((yield* objectOf(f.key, `cmp_${f.n}_1`)).daily_budget_minor, 14_000)
        const far = yield* send(f.key, "POST", `/api/v1/campaigns/cmp_${f.n}_1/budget`, { new_daily_budget_minor: 30_000, applied_by: userId })
        assert.strictEqual(far.status, 422, far.text)
        assert.strictEqual(far.json.error.code, "budget_change_out_of_bounds")
        const none = yield* send(f.key, "POST", `/api/v1/campaigns/cmp_${f.n}_2/budget`, { new_daily_budget_minor: 1_000, applied_by: userId })
        assert.strictEqual(none.status, 409, none.text)
        assert.strictEqual(none.json.error.code, "campaign_not_editable")
      }))
  })

  describe("POST /api/v1/conversion-sync/actions/{action_id}/rollback", () => {
    it.effect("restores the pre-state while the object carries what the row wrote; after a drift answers not_reversible and writes nothing", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const set = `as_${f.n}_2_1`
        const { userId } = yield* seedMemberSession(f, "owner")
        const live = (yield* objectOf(f.key, set)).daily_budget_minor as number
        const changed = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: live + 300, applied_by: userId })
        assert.strictEqual(changed.status, 200, changed.text)
        assert.deepStrictEqual(Object.keys(changed.json), ["data"])
        const rolled = yield* send(f.key, "POST", `/api/v1/conversion-sync/actions/${changed.json.data.action_id}/rollback`)
        assert.strictEqual(rolled.status, 200, rolled.text)
        assert.deepStrictEqual(Object.keys(rolled.json), ["data"])
        assert.strictEqual(rolled.json.data.outcome, "applied")
        assert.strictEqual(rolled.json.data.rollback_of, changed.json.data.action_id)
        assert.strictEqual((yield* objectOf(f.key, set)).daily_budget_minor, live)

        const second = yield* send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: live + 400, applied_by: userId })
        assert.strictEqual(second.status, 200, second.text)
        yield* patchObjects(f.key, [{ id: set, daily_budget_minor: live + 450 }])
        const before = yield* writeCount(f.key)
        const drifted = yield* send(f.key, "POST", `/api/v1/conversion-sync/actions/${second.json.data.action_id}/rollback`)
        assert.strictEqual(drifted.status, 200, drifted.text)
        assert.deepStrictEqual(Object.keys(drifted.json), ["data"])
        assert.strictEqual(drifted.json.data.outcome, "not_reversible")
        assert.strictEqual(drifted.json.data.reason_code, "state_drifted")
        assert.strictEqual(yield* writeCount(f.key), before)
        assert.strictEqual((yield* objectOf(f.key, set)).daily_budget_minor, live + 450)

        const unknown = yield* send(f.key, "POST", `/api/v1/conversion-sync/actions/${crypto.randomUUID()}/rollback`)
        assert.strictEqual(unknown.status, 404, unknown.text)
      }))
  })

  describe("concurrency", () => {
    it.effect("50 parallel changes with one key and 50 with distinct keys on one ad set: exactly the allowed writes reach the platform, applied one after the other, and the ledger ends where the platform is", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const set = `as_${f.n}_2_1`
        const { userId } = yield* seedMemberSession(f, "owner")
        yield* setFaults(f.key, { rate_limit_per_second: 100_000 })
        yield* patchObjects(f.key, [{ id: set, daily_budget_minor: 10_000 }])
        const before = yield* writeCount(f.key)
        const shared = crypto.randomUUID()
        const sameKey = Array.from({ length: 50 }, () =>
          send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: 10_500, applied_by: userId }, shared))
        // Every value differs, and all lie within +/-50 % of any of the others: each is allowed against whatever it reads.
        const distinct = Array.from({ length: 50 }, (_, i) =>
          send(f.key, "POST", `/api/v1/adsets/${set}/budget`, { new_daily_budget_minor: 10_001 + i, applied_by: userId }))
        const answers = yield* Effect.all([...sameKey, ...distinct], { concurrency: "unbounded" })
        const same = answers.slice(0, 50)
        const fresh = same.filter((a) => a.status === 200 && a.headers.get("idempotent-replayed") === null)
        assert.strictEqual(fresh.length, 1, same.map((a) => a.status).join(","))
        for (const answer of same) {
          assert.include([200, 409], answer.status, answer.text)
          if (answer.status === 409) assert.strictEqual(answer.json.error.code, "idempotency_key_in_flight")
        }
        for (const answer of answers.slice(50)) assert.strictEqual(answer.status, 200, answer.text)

        const applied = (yield* ledger(f.profileId, set)).filter((r) => r.state === "applied")
        const noChange = answers.filter((a) => a.status === 200 && a.json.data.outcome === "no_change" && a.headers.get("idempotent-replayed") === null)
        assert.strictEqual(applied.length + noChange.length, 51)
        assert.strictEqual(yield* writeCount(f.key), before + applied.length)
        // Serialised: each write read the budget the previous one left.
        let current = 10_000
        for (const row of applied) {
          assert.strictEqual(row.pre_daily, current)
          current = row.written_daily
        }
        assert.strictEqual((yield* objectOf(f.key, set)).daily_budget_minor, current)
        yield* clearFaults(f.key)
      }), { timeout: 60_000 })
  })
})
