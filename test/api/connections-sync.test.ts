/**
 * Provider sync end to end through the sandbox ad platform served by the app itself (decision
 * 0058): an ad account is connected through a connect hand-off and the sandbox's consent page,
 * syncs are triggered over HTTP and worked by the background worker, and what they
 * wrote is compared with the sandbox's `_state`. Faults (throttle, token death) come from the
 * sandbox's `_faults`; a dead runner is a job left `running` under a lease that expires.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { SyncWorker, SyncWorkerSettings, defaultSyncWorkerSettings } from "../../src/ingestion/sync/worker.ts"
import { call, callAs } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { connectProvider, serveAppOnOwnPort } from "../support/providers.ts"
import { keyAuth } from "../support/sandbox-world.ts"
import { asApp, type PartnerApp, registerApp } from "../support/partner.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "campaigns:read", "analytics:read", "attribution:write", "conversions:read"]

interface Fixture extends SeededProfile {
  readonly key: string
}

const send = callAs

/** A profile a person created: the attribution add-on is on. */
const personProfile = Effect.gen(function*() {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
  return { ...profile, key } satisfies Fixture
})

/** An app-provisioned profile: the add-on starts off. */
const brokerProfile = Effect.gen(function*() {
  const app = yield* registerApp("Sync app")
  const created = yield* asApp(app, "/api/v1/profiles", "POST", { external_ref: `m-${crypto.randomUUID().slice(0, 8)}` })
  assert.strictEqual(created.status, 201, created.text)
  const profile = { profileId: created.json.data.profile_id as string, workspaceId: created.json.data.workspace_id as string }
  const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 10_000 })
  return { ...profile, key, app } satisfies Fixture & { readonly app: PartnerApp }
})

/** A test-control call on the sandbox world of `key`'s profile (decision 0109). */
const sandbox = (key: string, method: string, path: string, body?: unknown) =>
  call(`/sandbox/adplatform${path}`, {
    method,
    headers: { "content-type": "application/json", ...keyAuth(key) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const setFaults = (key: string, faults: Record<string, unknown>) =>
  Effect.map(sandbox(key, "POST", "/_faults", faults), (response) => assert.strictEqual(response.status, 200, response.text))

const clearFaults = (key: string) =>
  setFaults(key, { throttle: 0, error_rate: 0, fail_next: 0, timeout_ms: 0, missing_permission: false, revoke_tokens: false })

/**
 * Connects the sandbox's ad account through a connect hand-off, as a person would: mint, consent
 * at the sandbox, back through the service's callback; the poll names the connection.
 */
const connect = (fixture: Fixture) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const { connectionId } = yield* connectProvider(fixture.key, "adplatform")
    const [row] = yield* sql<{ account: string }>`SELECT external_account_id AS account FROM connections WHERE id = ${connectionId}`
    return { connectionId, accountId: row?.account ?? "" }
  })

const trigger = (fixture: Fixture, body: Record<string, unknown>) =>
  Effect.map(send(fixture.key, "POST", "/api/v1/connections/sync", body), (response) => {
    assert.strictEqual(response.status, 202, response.text)
    return response.json.data as ReadonlyArray<any>
  })

const progress = (fixture: Fixture, jobId: string) =>
  Effect.map(send(fixture.key, "GET", `/api/v1/connections/sync/${jobId}`), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return response.json.data
  })

const settled = (fixture: Fixture, jobId: string, within: Duration.Input = "60 seconds") =>
  eventually(progress(fixture, jobId), (job) => ["done", "failed", "cancelled"].includes(job.status), {
    what: `sync job ${jobId} to finish`,
    within,
    every: "100 millis"
  })

/** `start` and `end` of the last 7 days (UTC), today included. */
const lastWeek = () => {
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)
  return `start=${day(-6)}&end=${day(0)}`
}

const count = (statement: Effect.Effect<ReadonlyArray<any>, unknown, never>) => Effect.map(statement, (rows) => Number(rows[0]?.n ?? 0))

/** The sandbox's account as `_state` shows it, in the world of `key`'s profile. */
const sandboxAccount = (key: string, accountId: string) =>
  Effect.map(sandbox(key, "GET", "/_state"), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    const account = (response.json.accounts as ReadonlyArray<any>).find((a) => a.id === accountId)
    assert.isDefined(account, `account ${accountId} in the sandbox`)
    return account
  })

const background = Layer.succeed(SyncWorkerSettings)({
  ...defaultSyncWorkerSettings,
  pollInterval: Duration.millis(100),
  retryBase: Duration.millis(300),
  lease: Duration.seconds(3),
  recentDays: 30
})

layer(serveAppOnOwnPort().pipe(Layer.provide(background)), { timeout: "180 seconds", excludeTestServices: true })(
  "provider sync",
  (it) => {
    describe("POST /api/v1/connections/sync", () => {
      it.effect("a manual sync copies the account's structure with the sandbox's ids and budgets, and its insights into ad_spend", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* personProfile
          yield* clearFaults(fixture.key)
          const { connectionId, accountId } = yield* connect(fixture)
          const [queued] = yield* trigger(fixture, { connection_id: connectionId })
          assert.strictEqual(queued.kind, "manual")
          assert.include(["queued", "running"], queued.status)
          const job = yield* settled(fixture, queued.job_id)
          assert.strictEqual(job.status, "done", JSON.stringify(job))
          assert.strictEqual(job.error, null)

          const account = yield* sandboxAccount(fixture.key, accountId)
          const campaigns = account.campaigns as ReadonlyArray<any>
          const adSets = campaigns.flatMap((c) => c.ad_sets as ReadonlyArray<any>)
          const ads = adSets.flatMap((s) => s.ads as ReadonlyArray<any>)
          assert.isAbove(ads.length, 0)
          assert.strictEqual(job.progress.campaigns, campaigns.length)
          assert.strictEqual(job.progress.ad_sets, adSets.length)
          assert.strictEqual(job.progress.ads, ads.length)
          assert.isAbove(job.progress.insight_rows, 0)

          const storedCampaigns = yield* sql<any>`
            SELECT platform_id, name, status, daily_budget_minor::text AS daily, currency FROM ad_campaigns
            WHERE profile_id = ${fixture.profileId} ORDER BY platform_id`
          assert.deepStrictEqual(
            storedCampaigns,
            [...campaigns].sort((a, b) => a.id < b.id ? -1 : 1).map((c) => ({
              platform_id: c.id,
              name: c.name,
              status: c.status,
              daily: c.daily_budget_minor === null ? null : String(c.daily_budget_minor),
              currency: account.currency
            }))
          )
          const storedSets = yield* sql<any>`
            SELECT s.platform_id, s.status, s.daily_budget_minor::text AS daily, s.lifetime_budget_minor::text AS lifetime,
                   c.platform_id AS campaign
            FROM ad_sets s JOIN ad_campaigns c ON c.id = s.campaign_id WHERE s.profile_id = ${fixture.profileId} ORDER BY s.platform_id`
          assert.deepStrictEqual(
            storedSets,
            campaigns.flatMap((c) => (c.ad_sets as ReadonlyArray<any>).map((s) => ({
              platform_id: s.id,
              status: s.status,
              daily: s.daily_budget_minor === null ? null : String(s.daily_budget_minor),
              lifetime: s.lifetime_budget_minor === null ? null : String(s.lifetime_budget_minor),
              campaign: c.id
            }))).sort((a, b) => a.platform_id < b.platform_id ? -1 : 1)
          )
          const storedAds = yield* sql<any>`
            SELECT a.platform_id, a.status FROM ads a WHERE a.profile_id = ${fixture.profileId} ORDER BY a.platform_id`
          assert.deepStrictEqual(
            storedAds,
            ads.map((a) => ({ platform_id: a.id, status: a.status })).sort((a, b) => a.platform_id < b.platform_id ? -1 : 1)
          )

          const spend = yield* sql<any>`
            SELECT count(*)::int AS n, count(*) FILTER (WHERE source = 'sync')::int AS synced,
                   count(*) FILTER (WHERE reported_conversions IS NOT NULL)::int AS reported,
                   count(DISTINCT currency)::int AS currencies, min(currency) AS currency
            FROM ad_spend WHERE profile_id = ${fixture.profileId}`
          assert.strictEqual(spend[0].n, job.progress.insight_rows)
          assert.strictEqual(spend[0].synced, spend[0].n)
          assert.strictEqual(spend[0].reported, spend[0].n)
          assert.strictEqual(spend[0].currency, account.currency)

          const listed = yield* send(fixture.key, "GET", "/api/v1/connections")
          const shown = (listed.json.data as ReadonlyArray<any>).find((c) => c.id === connectionId)
          assert.isString(shown?.last_synced_at, listed.text)

          // An ad paused by hand at the provider: the next sync brings the change, and writes the same
          // rows again (upserts), never a second copy.
          const target = ads.find((a) => a.status === "active") ?? ads[0]
          const paused = yield* sandbox(fixture.key, "PATCH", "/_state", { objects: [{ id: target.id, status: "paused" }] })
          assert.strictEqual(paused.status, 200, paused.text)
          const [again] = yield* trigger(fixture, { connection_id: connectionId, kind: "structure" })
          assert.strictEqual((yield* settled(fixture, again.job_id)).status, "done")
          assert.strictEqual(yield* count(sql`SELECT count(*)::int AS n FROM ads WHERE profile_id = ${fixture.profileId}`), ads.length)
          const [pausedRow] = yield* sql<any>`SELECT status FROM ads WHERE profile_id = ${fixture.profileId} AND platform_id = ${target.id}`
          assert.strictEqual(pausedRow.status, "paused")
          yield* sandbox(fixture.key, "PATCH", "/_state", { objects: [{ id: target.id, status: target.status }] })
        }))

      it.effect("synced spend and the platform's reported counts reach the campaign rows; an ad set carries its learning stage and objective", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* personProfile
          yield* clearFaults(fixture.key)
          const { connectionId, accountId } = yield* connect(fixture)
          // Spend shows in the profile's currency: the account's here, so no rate is needed.
          const account = yield* sandboxAccount(fixture.key, accountId)
          yield* sql`UPDATE profiles SET currency = ${account.currency} WHERE id = ${fixture.profileId}`
          yield* sql`UPDATE workspaces SET reporting_currency = ${account.currency} WHERE id = ${fixture.workspaceId}`
          const [queued] = yield* trigger(fixture, { connection_id: connectionId })
          assert.strictEqual((yield* settled(fixture, queued.job_id)).status, "done")
          const expected = yield* sql<any>`
            SELECT campaign_external_id AS id, sum(reported_conversions)::int AS conversions, sum(reported_chats)::int AS chats
            FROM ad_spend WHERE profile_id = ${fixture.profileId} AND day >= (now() AT TIME ZONE 'UTC')::date - 6
            GROUP BY 1 ORDER BY 1`
          const rows = yield* send(fixture.key, "GET", `/api/v1/campaigns?${lastWeek()}`)
          assert.strictEqual(rows.status, 200, rows.text)
          assert.strictEqual(rows.json.meta.adplatform_reported_status, "synced")
          const withSpend = (rows.json.data as ReadonlyArray<any>).filter((row) => row.spend !== null)
          assert.isAbove(withSpend.length, 0, rows.text)
          for (const row of expected) {
            const shown = (rows.json.data as ReadonlyArray<any>).find((r) => r.platform_id === row.id)
            assert.isDefined(shown, `campaign ${row.id} listed`)
            assert.strictEqual(shown.in_synced_structure, true)
            assert.strictEqual(shown.adplatform_reported_conversions, row.conversions)
            assert.strictEqual(shown.adplatform_reported_chats, row.chats)
            assert.notStrictEqual(shown.spend, null)
          }
          const adSets = yield* send(fixture.key, "GET", `/api/v1/campaigns?level=ad_set&${lastWeek()}`)
          assert.strictEqual(adSets.status, 200, adSets.text)
          const stored = yield* sql<any>`
            SELECT s.platform_id, s.learning_stage_status, c.objective FROM ad_sets s JOIN ad_campaigns c ON c.id = s.campaign_id
            WHERE s.profile_id = ${fixture.profileId}`
          for (const row of stored) {
            const shown = (adSets.json.data as ReadonlyArray<any>).find((r) => r.platform_id === row.platform_id)
            assert.isDefined(shown)
            assert.strictEqual(shown.learning_stage_status, row.learning_stage_status)
            assert.strictEqual(shown.campaign_objective, row.objective)
          }
          const [total] = yield* sql<any>`
            SELECT sum(amount)::text AS spend FROM ad_spend
            WHERE profile_id = ${fixture.profileId} AND day >= (now() AT TIME ZONE 'UTC')::date - 6`
          const overview = yield* send(fixture.key, "GET", `/api/v1/overview?${lastWeek()}`)
          assert.strictEqual(overview.status, 200, overview.text)
          assert.strictEqual(Number(overview.json.data.current.spend), Number(total.spend), overview.text)
          const series = yield* send(fixture.key, "GET", `/api/v1/timeseries?${lastWeek()}`)
          assert.strictEqual(series.status, 200, series.text)
          assert.strictEqual(series.json.meta.spend_measured, true)
          const daily = (series.json.data as ReadonlyArray<any>).reduce((sum, point) => sum + Number(point.spend ?? 0), 0)
          assert.closeTo(daily, Number(total.spend), 1e-6)
        }))

      it.effect("ad referrals accept a synced ad and answer 422 unknown_ad for an id the sync never brought", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* personProfile
          yield* clearFaults(fixture.key)
          const { connectionId } = yield* connect(fixture)
          const [queued] = yield* trigger(fixture, { connection_id: connectionId, kind: "structure" })
          assert.strictEqual((yield* settled(fixture, queued.job_id)).status, "done")
          const [ad] = yield* sql<any>`SELECT platform_id FROM ads WHERE profile_id = ${fixture.profileId} LIMIT 1`
          const referral = (adId: string) => ({
            referrals: [{
              idempotency_key: `ref-${crypto.randomUUID()}`,
              occurred_at: new Date(Date.now() - 3_600_000).toISOString(),
              ad_id: adId,
              customer: { external_ref: "cust-sync-1" }
            }]
          })
          const accepted = yield* send(fixture.key, "POST", "/api/v1/partner/ad-referrals", referral(ad.platform_id))
          assert.strictEqual(accepted.status, 200, accepted.text)
          assert.strictEqual(accepted.json.data.created, 1)
          const refused = yield* send(fixture.key, "POST", "/api/v1/partner/ad-referrals", referral("never-synced-ad"))
          assert.strictEqual(refused.status, 422, refused.text)
          assert.strictEqual(refused.json.error.code, "unknown_ad")
        }))

      it.effect("two clicks queue one job; the jobs list newest first; an unknown connection is 404, a bad body 400, an unknown job 404", () =>
        Effect.gen(function*() {
          const fixture = yield* personProfile
          yield* clearFaults(fixture.key)
          const { connectionId } = yield* connect(fixture)
          const [first, second] = yield* Effect.all([
            trigger(fixture, { connection_id: connectionId, kind: "structure" }),
            trigger(fixture, { connection_id: connectionId, kind: "structure" })
          ], { concurrency: 2 })
          assert.strictEqual(first[0].job_id, second[0].job_id)
          yield* settled(fixture, first[0].job_id)

          const all = yield* trigger(fixture, {})
          assert.deepStrictEqual(all.map((job) => job.connection_id), [connectionId])
          yield* settled(fixture, all[0].job_id)

          // The list: newest first, keyset pages, one connection's or all, never another profile's.
          const listed = yield* send(fixture.key, "GET", `/api/v1/connections/sync?connection_id=${connectionId}&limit=1`)
          assert.strictEqual(listed.status, 200, listed.text)
          assert.deepStrictEqual(listed.json.data.map((job: any) => job.job_id), [all[0].job_id])
          assert.strictEqual(listed.json.pagination.has_next, true)
          const next = yield* send(fixture.key, "GET", `/api/v1/connections/sync?limit=1&cursor=${listed.json.pagination.cursor}`)
          assert.deepStrictEqual(next.json.data.map((job: any) => job.job_id), [first[0].job_id])
          assert.strictEqual(next.json.pagination.has_next, false)
          const badCursor = yield* send(fixture.key, "GET", "/api/v1/connections/sync?cursor=WyJ4IiwieSJd")
          assert.strictEqual(badCursor.status, 400, badCursor.text)
          assert.strictEqual(badCursor.json.error.reason, "invalid_parameter:cursor")
          const badConnection = yield* send(fixture.key, "GET", "/api/v1/connections/sync?connection_id=nope")
          assert.strictEqual(badConnection.status, 400, badConnection.text)

          const unknown = yield* send(fixture.key, "POST", "/api/v1/connections/sync", { connection_id: crypto.randomUUID() })
          assert.strictEqual(unknown.status, 404, unknown.text)
          const bad = yield* send(fixture.key, "POST", "/api/v1/connections/sync", { connection_id: "not-a-uuid", kind: "everything" })
          assert.strictEqual(bad.status, 400, bad.text)
          const noJob = yield* send(fixture.key, "GET", `/api/v1/connections/sync/${crypto.randomUUID()}`)
          assert.strictEqual(noJob.status, 404, noJob.text)
          // Another profile's job is not this profile's.
          const other = yield* personProfile
          const foreign = yield* send(other.key, "GET", `/api/v1/connections/sync/${first[0].job_id}`)
          assert.strictEqual(foreign.status, 404, foreign.text)
          const foreignList = yield* send(other.key, "GET", "/api/v1/connections/sync")
          assert.deepStrictEqual(foreignList.json.data, [])
          const readOnly = yield* seedApiKey(fixture, { scopes: ["connections:read"] })
          const refused = yield* send(readOnly.key, "POST", "/api/v1/connections/sync", {})
          assert.strictEqual(refused.status, 403, refused.text)
          const read = yield* send(readOnly.key, "GET", `/api/v1/connections/sync/${first[0].job_id}`)
          assert.strictEqual(read.status, 200, read.text)
        }))
    })

    describe("the attribution add-on", () => {
      it.effect("while off, structure syncs and spend does not; turning it on works the backfill once", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* brokerProfile
          yield* clearFaults(fixture.key)
          const { connectionId } = yield* connect(fixture)
          const [manual] = yield* trigger(fixture, { connection_id: connectionId })
          const done = yield* settled(fixture, manual.job_id)
          assert.strictEqual(done.status, "done", JSON.stringify(done))
          assert.strictEqual(done.progress.insights_skipped, "attribution_disabled")
          assert.isAbove(yield* count(sql`SELECT count(*)::int AS n FROM ads WHERE profile_id = ${fixture.profileId}`), 0)
          assert.strictEqual(yield* count(sql`SELECT count(*)::int AS n FROM ad_spend WHERE profile_id = ${fixture.profileId}`), 0)

          const [insights] = yield* trigger(fixture, { connection_id: connectionId, kind: "insights" })
          const cancelled = yield* settled(fixture, insights.job_id)
          assert.strictEqual(cancelled.status, "cancelled")
          assert.strictEqual(cancelled.error, "attribution_disabled")
          assert.strictEqual(yield* count(sql`SELECT count(*)::int AS n FROM ad_spend WHERE profile_id = ${fixture.profileId}`), 0)

          const on = yield* asApp(fixture.app, `/api/v1/profiles/${fixture.profileId}/entitlements/svc_attribution`, "PUT", { enabled: true })
          assert.strictEqual(on.status, 200, on.text)
          const again = yield* asApp(fixture.app, `/api/v1/profiles/${fixture.profileId}/entitlements/svc_attribution`, "PUT", { enabled: true })
          assert.strictEqual(again.status, 200, again.text)
          const backfills = yield* sql<any>`
            SELECT id::text AS id FROM sync_jobs WHERE profile_id = ${fixture.profileId} AND kind = 'backfill'`
          assert.lengthOf(backfills, 1)
          const backfill = yield* settled(fixture, backfills[0].id, "90 seconds")
          assert.strictEqual(backfill.status, "done", JSON.stringify(backfill))
          assert.strictEqual(backfill.attempts, 1)
          assert.isAbove(yield* count(sql`SELECT count(*)::int AS n FROM ad_spend WHERE profile_id = ${fixture.profileId}`), 0)

          // Archiving the profile takes its jobs, its synced structure and its connections with it.
          const archived = yield* asApp(fixture.app, `/api/v1/profiles/${fixture.profileId}`, "DELETE")
          assert.strictEqual(archived.status, 200, archived.text)
          for (const table of ["sync_jobs", "ads", "ad_sets", "ad_campaigns", "connections"]) {
            assert.strictEqual(
              yield* count(sql`SELECT count(*)::int AS n FROM ${sql(table)} WHERE profile_id = ${fixture.profileId}`),
              0,
              table
            )
          }
        }))
    })

    describe("failures", () => {
      it.effect("a throttled sync is queued again after a backoff and completes once the provider lets it", () =>
        Effect.gen(function*() {
          const fixture = yield* personProfile
          yield* clearFaults(fixture.key)
          const { connectionId } = yield* connect(fixture)
          // More 429s in a row than the HTTP client retries: the attempt fails throttled and the job is queued again.
          yield* setFaults(fixture.key, { throttle: 6 })
          const [queued] = yield* trigger(fixture, { connection_id: connectionId, kind: "structure" })
          const throttled = yield* eventually(progress(fixture, queued.job_id), (job) => job.error === "provider_throttled", {
            what: "the job to be throttled",
            within: "60 seconds"
          })
          assert.include(["queued", "running"], throttled.status)
          yield* clearFaults(fixture.key)
          const job = yield* settled(fixture, queued.job_id)
          assert.strictEqual(job.status, "done", JSON.stringify(job))
          assert.isAtLeast(job.attempts, 2)
        }))

      it.effect("a provider answering 5xx past the client's retries: the job is queued again and completes", () =>
        Effect.gen(function*() {
          const fixture = yield* personProfile
          yield* clearFaults(fixture.key)
          const { connectionId } = yield* connect(fixture)
          yield* setFaults(fixture.key, { fail_next: 6 })
          const [queued] = yield* trigger(fixture, { connection_id: connectionId, kind: "structure" })
          const job = yield* settled(fixture, queued.job_id)
          assert.strictEqual(job.status, "done", JSON.stringify(job))
          assert.isAtLeast(job.attempts, 2)
        }))

      it.effect("a grant the provider refuses mid-sync (401) marks the connection reconnect_required, writes the event and fails the job for good", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* personProfile
          yield* clearFaults(fixture.key)
          const { connectionId } = yield* connect(fixture)
          // Every access token issued so far now answers 401 invalid_token, with no push: only the sync finds out.
          yield* setFaults(fixture.key, { expire_tokens: true })
          const [queued] = yield* trigger(fixture, { connection_id: connectionId, kind: "structure" })
          const job = yield* settled(fixture, queued.job_id)
          assert.strictEqual(job.status, "failed", JSON.stringify(job))
          assert.strictEqual(job.error, "reconnect_required")
          assert.strictEqual(job.attempts, 1)
          const [connection] = yield* sql<any>`SELECT status FROM connections WHERE id = ${connectionId}`
          assert.strictEqual(connection.status, "reconnect_required")
          assert.strictEqual(
            yield* count(sql`
              SELECT count(*)::int AS n FROM outbox
              WHERE profile_id = ${fixture.profileId} AND topic = 'connection.reconnect_required'`),
            1
          )
          const refused = yield* send(fixture.key, "POST", "/api/v1/connections/sync", { connection_id: connectionId })
          assert.strictEqual(refused.status, 409, refused.text)
          assert.strictEqual(refused.json.error.reason, "reconnect_required")
        }))

      it.effect("a revoked grant (the provider's push or the sync's 401, whichever comes first) leaves the job failed and one event", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* personProfile
          yield* clearFaults(fixture.key)
          const { connectionId } = yield* connect(fixture)
          yield* setFaults(fixture.key, { revoke_tokens: true })
          const answer = yield* send(fixture.key, "POST", "/api/v1/connections/sync", { connection_id: connectionId, kind: "structure" })
          yield* clearFaults(fixture.key)
          if (answer.status === 202) {
            const job = yield* settled(fixture, answer.json.data[0].job_id)
            assert.strictEqual(job.status, "failed", JSON.stringify(job))
            assert.strictEqual(job.error, "reconnect_required")
          } else {
            // The grant-death push reached the service first: the sync is refused up front.
            assert.strictEqual(answer.status, 409, answer.text)
          }
          yield* eventually(
            sql<any>`SELECT status FROM connections WHERE id = ${connectionId}`,
            (rows) => rows[0]?.status === "reconnect_required",
            { what: "the connection to need a reconnect", within: "20 seconds" }
          )
          assert.strictEqual(
            yield* count(sql`
              SELECT count(*)::int AS n FROM outbox
              WHERE profile_id = ${fixture.profileId} AND topic = 'connection.reconnect_required'`),
            1
          )
        }))

      it.effect("a job whose runner died is claimed again once its lease expires and completes", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* personProfile
          yield* clearFaults(fixture.key)
          const { connectionId } = yield* connect(fixture)
          const jobId = crypto.randomUUID()
          // A runner claimed it (attempt 1) and died: the row stays running under a lease about to expire.
          yield* sql`
            INSERT INTO sync_jobs (id, profile_id, connection_id, kind, status, reason, attempts, started_at, lease_until, progress)
            VALUES (${jobId}, ${fixture.profileId}, ${connectionId}, 'structure', 'running', 'requested', 1, now(),
                    now() + interval '2 seconds', '{"phase": "structure", "campaigns": 1}')`
          const during = yield* progress(fixture, jobId)
          assert.strictEqual(during.status, "running")
          const job = yield* settled(fixture, jobId)
          assert.strictEqual(job.status, "done", JSON.stringify(job))
          assert.strictEqual(job.attempts, 2)
          assert.isAbove(job.progress.ads, 0)
        }))
    })

    describe("the nightly sync", () => {
      it.effect("queues structure for every live ad-platform connection and recent insights where the add-on is on", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const on = yield* personProfile
          const off = yield* brokerProfile
          yield* clearFaults(on.key)
          yield* clearFaults(off.key)
          const a = yield* connect(on)
          const b = yield* connect(off)
          const worker = yield* SyncWorker
          const queued = yield* worker.enqueueNightly
          assert.isAtLeast(queued.structure, 2)
          assert.isAtLeast(queued.insights, 1)
          const kinds = (connectionId: string) =>
            Effect.map(
              sql<any>`SELECT kind FROM sync_jobs WHERE connection_id = ${connectionId} AND reason = 'nightly' ORDER BY kind`,
              (rows) => rows.map((row) => row.kind)
            )
          assert.deepStrictEqual(yield* kinds(a.connectionId), ["insights", "structure"])
          assert.deepStrictEqual(yield* kinds(b.connectionId), ["structure"])
          // Run again while those are still queued or running: joined, nothing new for these connections.
          yield* worker.enqueueNightly
          assert.isAtMost((yield* kinds(a.connectionId)).length, 4)
          yield* eventually(
            sql<any>`SELECT count(*)::int AS n FROM sync_jobs WHERE connection_id IN (${a.connectionId}, ${b.connectionId})
                     AND status IN ('queued', 'running')`,
            (rows) => rows[0].n === 0,
            { what: "the nightly jobs to be worked", within: "90 seconds" }
          )
        }))
    })
  }
)
