/**
 * URL tags on ads (api-endpoints.md quality ad-ids url-tags; decision 0088) end to end: the real
 * app and the sandbox ad platform it serves, an account connected through a hand-off. On the
 * platform new URL tags are a new creative and restart the ad set's learning; the sandbox does
 * the same, and `_state` shows each ad's `creative_id` and `url_tags`.
 *
 * A generated account of 120 ads: campaign 1 is click-to-chat (not link ads), campaign 2 links
 * to a website (`ad_<n>_2_<s>_<a>`).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { TRACKING_URL_TAGS } from "../../src/ads/url-tags/service.ts"
import { adFixture, objectOf, patchObjects, send, WRITE_SCOPES, writeCount } from "../support/adplatform.ts"
import { serveAppOnOwnPort } from "../support/providers.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const SCOPES = [...WRITE_SCOPES, "analytics:read"]
const APPLY = "/api/v1/quality/ad-ids/url-tags/apply"
const UNDO = "/api/v1/quality/ad-ids/url-tags/undo"
const STATUS = "/api/v1/quality/ad-ids/url-tags"

const fixture = (persona = "one_account") => adFixture(persona, SCOPES)

const apply = (key: string, adIds: ReadonlyArray<string>, idempotencyKey?: string) =>
  send(key, "POST", APPLY, { ad_ids: adIds, acknowledge_learning_reset: true }, idempotencyKey)

const ledger = (profileId: string, adId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<any>`SELECT id, action, state, pre_creative_id, written_creative_id, rollback_of, reason_code
             FROM ad_actions WHERE profile_id = ${profileId} AND object_id = ${adId} ORDER BY created_at, id`)

const audits = (profileId: string, adId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<any>`SELECT action, details FROM audit_events WHERE profile_id = ${profileId} AND target_id = ${adId}
             AND action LIKE 'ad_action.%' ORDER BY occurred_at, id`)

layer(serveAppOnOwnPort(), { timeout: "180 seconds", excludeTestServices: true })("url tags", (it) => {
  describe("POST /api/v1/quality/ad-ids/url-tags/apply", () => {
    it.effect("applies on link ads (a new creative each, learning restarts), skips the rest with a reason; replay and re-apply write nothing", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const [a1, a2, archived] = [`ad_${f.n}_2_1_1`, `ad_${f.n}_2_1_2`, `ad_${f.n}_2_1_3`]
        const chat = `ad_${f.n}_1_1_1`
        yield* patchObjects(f.key, [{ id: archived, status: "archived" }, { id: `as_${f.n}_2_1`, learning_stage_status: "SUCCESS" }])
        const before = yield* writeCount(f.key)
        const idem = crypto.randomUUID()
        const answer = yield* apply(f.key, [a1, a2, chat, archived, "ad_not_ours", a1], idem)
        assert.strictEqual(answer.status, 200, answer.text)
        const { data } = answer.json
        assert.strictEqual(data.url_tags, TRACKING_URL_TAGS)
        assert.deepStrictEqual([data.applied_count, data.skipped_count, data.refused_count], [2, 3, 0])
        assert.deepStrictEqual(
          data.results.map((r: any) => [r.ad_id, r.result, r.reason]),
          [[a1, "applied", null], [a2, "applied", null], [chat, "skipped", "not_a_link_ad"], [archived, "skipped", "archived"], [
            "ad_not_ours",
            "skipped",
            "not_found"
          ]]
        )
        const first = data.results[0]
        assert.strictEqual(first.previous_creative_id, `cr_${a1}_1`)
        assert.notStrictEqual(first.creative_id, first.previous_creative_id)
        assert.isNull(first.error)
        const live = yield* objectOf(f.key, a1)
        assert.strictEqual(live.creative_id, first.creative_id)
        assert.strictEqual(live.url_tags, TRACKING_URL_TAGS)
        assert.strictEqual((yield* objectOf(f.key, `as_${f.n}_2_1`)).learning_stage_status, "LEARNING")
        assert.strictEqual((yield* objectOf(f.key, chat)).url_tags, null)
        assert.strictEqual(yield* writeCount(f.key), before + 2)
        const rows = yield* ledger(f.profileId, a1)
        assert.deepStrictEqual(rows.map((r: any) => ({ ...r, id: undefined })), [{
          id: undefined,
          action: "url_tags",
          state: "applied",
          pre_creative_id: `cr_${a1}_1`,
          written_creative_id: first.creative_id,
          rollback_of: null,
          reason_code: null
        }])
        assert.strictEqual(rows[0].id, first.action_id)
        const audited = yield* audits(f.profileId, a1)
        assert.deepStrictEqual(audited.map((a: any) => [a.action, a.details.action_id, a.details.outcome]), [[
          "ad_action.url_tags",
          first.action_id,
          "applied"
        ]])
        // A gone ad leaves an audited refusal and no ledger row.
        assert.deepStrictEqual(yield* ledger(f.profileId, archived), [])
        assert.strictEqual((yield* audits(f.profileId, archived))[0].details.refused, "InvalidState")
        // The same key and body replays the answer without touching the platform.
        const replay = yield* apply(f.key, [a1, a2, chat, archived, "ad_not_ours", a1], idem)
        assert.strictEqual(replay.status, 200, replay.text)
        assert.deepStrictEqual(replay.json, answer.json)
        const conflict = yield* apply(f.key, [a1], idem)
        assert.strictEqual(conflict.status, 409, conflict.text)
        assert.strictEqual(conflict.json.error.code, "idempotency_key_conflict")
        // A new key: the ads already carry the tags, nothing is written.
        const again = yield* apply(f.key, [a1, a2])
        assert.strictEqual(again.status, 200, again.text)
        assert.deepStrictEqual(again.json.data.results.map((r: any) => [r.result, r.reason]), [["skipped", "already_tagged"], [
          "skipped",
          "already_tagged"
        ]])
        assert.strictEqual(yield* writeCount(f.key), before + 2)
        assert.strictEqual((yield* objectOf(f.key, a1)).creative_id, first.creative_id)
      }))

    it.effect("the platform's refusal is that ad's result (refused, with its code), recorded failed; the others still apply", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const [locked, fine] = [`ad_${f.n}_2_2_1`, `ad_${f.n}_2_2_2`]
        // The fine ad carries an advertiser's own parameters: they stay, the service's keys are replaced.
        yield* patchObjects(f.key, [{ id: locked, creative_in_review: true }, { id: fine, url_tags: "ref=partner&utm_source=manual" }])
        const answer = yield* apply(f.key, [locked, fine])
        assert.strictEqual(answer.status, 200, answer.text)
        const [refused, applied] = answer.json.data.results
        assert.strictEqual(refused.result, "refused")
        assert.strictEqual(refused.error.code, "adplatform_unavailable")
        assert.strictEqual(refused.error.provider_status, 400)
        assert.strictEqual(refused.error.provider_code, "creative_in_review")
        assert.strictEqual(applied.result, "applied")
        assert.strictEqual((yield* objectOf(f.key, fine)).url_tags, `ref=partner&${TRACKING_URL_TAGS}`)
        assert.strictEqual((yield* objectOf(f.key, locked)).creative_id, `cr_${locked}_1`)
        assert.deepStrictEqual((yield* ledger(f.profileId, locked)).map((r: any) => [r.action, r.state, r.written_creative_id]), [[
          "url_tags",
          "failed",
          null
        ]])
      }))

    it.effect("refused before any write: 422 without acknowledge_learning_reset or with over 25 ads, 400 without Idempotency-Key, 403 without campaigns:apply", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const ad = `ad_${f.n}_2_1_1`
        const before = yield* writeCount(f.key)
        const unacknowledged = yield* send(f.key, "POST", APPLY, { ad_ids: [ad] })
        assert.strictEqual(unacknowledged.status, 422, unacknowledged.text)
        assert.strictEqual(unacknowledged.json.error.code, "validation_error")
        const declined = yield* send(f.key, "POST", APPLY, { ad_ids: [ad], acknowledge_learning_reset: false })
        assert.strictEqual(declined.status, 422, declined.text)
        const many = Array.from({ length: 26 }, (_, i) => `ad_${f.n}_1_${Math.floor(i / 10) + 1}_${(i % 10) + 1}`)
        const tooMany = yield* apply(f.key, many)
        assert.strictEqual(tooMany.status, 422, tooMany.text)
        assert.strictEqual(tooMany.json.error.code, "validation_error")
        const none = yield* apply(f.key, [])
        assert.strictEqual(none.status, 422, none.text)
        const noKey = yield* send(f.key, "POST", APPLY, { ad_ids: [ad], acknowledge_learning_reset: true }, null)
        assert.strictEqual(noKey.status, 400, noKey.text)
        const { key: readOnly } = yield* seedApiKey(f, { scopes: ["campaigns:read", "analytics:read"] })
        const noScope = yield* apply(readOnly, [ad])
        assert.strictEqual(noScope.status, 403, noScope.text)
        assert.strictEqual(noScope.json.error.code, "insufficient_scope")
        assert.strictEqual(yield* writeCount(f.key), before)
        assert.deepStrictEqual(yield* ledger(f.profileId, ad), [])
        assert.strictEqual((yield* objectOf(f.key, ad)).url_tags, null)
      }))
  })

  describe("POST /api/v1/quality/ad-ids/url-tags/undo", () => {
    it.effect("puts the ad back on its previous creative (a rollback entry); then 404; drifted is not_reversible with nothing written", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const [ad, other] = [`ad_${f.n}_2_1_4`, `ad_${f.n}_2_1_5`]
        const none = yield* send(f.key, "POST", UNDO, { ad_id: ad })
        assert.strictEqual(none.status, 404, none.text)
        assert.strictEqual(none.json.error.code, "not_found")
        const applied = (yield* apply(f.key, [ad, other])).json.data.results
        const undone = yield* send(f.key, "POST", UNDO, { ad_id: ad })
        assert.strictEqual(undone.status, 200, undone.text)
        assert.strictEqual(undone.json.data.action, "rollback")
        assert.strictEqual(undone.json.data.outcome, "applied")
        assert.strictEqual(undone.json.data.rollback_of, applied[0].action_id)
        assert.deepStrictEqual(undone.json.data.creative, { previous_creative_id: applied[0].creative_id, creative_id: `cr_${ad}_1` })
        const live = yield* objectOf(f.key, ad)
        assert.strictEqual(live.creative_id, `cr_${ad}_1`)
        assert.strictEqual(live.url_tags, null)
        const twice = yield* send(f.key, "POST", UNDO, { ad_id: ad })
        assert.strictEqual(twice.status, 404, twice.text)
        // Someone re-tags the other ad in the platform's own UI: its change can no longer be undone.
        yield* patchObjects(f.key, [{ id: other, url_tags: "utm_source=manual" }])
        const moved = (yield* objectOf(f.key, other)).creative_id
        const before = yield* writeCount(f.key)
        const drifted = yield* send(f.key, "POST", `/api/v1/conversion-sync/actions/${applied[1].action_id}/rollback`)
        assert.strictEqual(drifted.status, 200, drifted.text)
        assert.strictEqual(drifted.json.data.outcome, "not_reversible")
        assert.strictEqual(drifted.json.data.reason_code, "state_drifted")
        assert.strictEqual(yield* writeCount(f.key), before)
        assert.strictEqual((yield* objectOf(f.key, other)).creative_id, moved)
        const rows = yield* ledger(f.profileId, other)
        assert.deepStrictEqual(rows.map((r: any) => [r.action, r.state, r.reason_code]), [["url_tags", "applied", null], [
          "rollback",
          "not_reversible",
          "state_drifted"
        ]])
      }))
  })

  describe("GET /api/v1/quality/ad-ids/url-tags", () => {
    it.effect("can_apply with recent changes; the reason when not: scope, grant, connection (and apply refuses the same way)", () =>
      Effect.gen(function*() {
        const f = yield* fixture()
        const ad = `ad_${f.n}_2_2_3`
        const applied = (yield* apply(f.key, [ad])).json.data.results[0]
        const status = yield* send(f.key, "GET", STATUS, undefined, null)
        assert.strictEqual(status.status, 200, status.text)
        assert.strictEqual(status.json.data.can_apply, true)
        assert.strictEqual(status.json.data.reason, null)
        assert.strictEqual(status.json.data.url_tags, TRACKING_URL_TAGS)
        assert.strictEqual(status.json.data.max_ads_per_call, 25)
        assert.deepStrictEqual(status.json.data.recent_changes.map((c: any) => [c.action_id, c.ad_id, c.action, c.state, c.creative_id]), [[
          applied.action_id,
          ad,
          "url_tags",
          "applied",
          applied.creative_id
        ]])
        const { key: reader } = yield* seedApiKey(f, { scopes: ["analytics:read"] })
        const scopeMissing = yield* send(reader, "GET", STATUS, undefined, null)
        assert.strictEqual(scopeMissing.status, 200, scopeMissing.text)
        assert.deepStrictEqual([scopeMissing.json.data.can_apply, scopeMissing.json.data.reason], [false, "scope_missing"])

        const noGrant = yield* fixture("no_manage_ads_permission")
        const grantStatus = yield* send(noGrant.key, "GET", STATUS, undefined, null)
        assert.deepStrictEqual([grantStatus.json.data.can_apply, grantStatus.json.data.reason], [false, "write_permission_missing"])
        const grantRefused = yield* apply(noGrant.key, [`ad_${noGrant.n}_2_1_1`])
        assert.strictEqual(grantRefused.status, 403, grantRefused.text)
        assert.strictEqual(grantRefused.json.error.code, "adplatform_write_permission_missing")

        const bare = yield* seedProfile()
        const { key: bareKey } = yield* seedApiKey(bare, { scopes: SCOPES })
        const bareStatus = yield* send(bareKey, "GET", STATUS, undefined, null)
        assert.deepStrictEqual([bareStatus.json.data.can_apply, bareStatus.json.data.reason, bareStatus.json.data.recent_changes], [
          false,
          "no_connection",
          []
        ])
        const bareRefused = yield* apply(bareKey, [ad])
        assert.strictEqual(bareRefused.status, 409, bareRefused.text)
        assert.strictEqual(bareRefused.json.error.code, "adplatform_connection_required")
      }))
  })
})
