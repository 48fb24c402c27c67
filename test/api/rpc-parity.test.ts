/**
 * The RPC parity calls and internal-service credentials (decisions 0081, 0082) against the real
 * application: each call over HTTP + JSON, the batch over HTTP + MessagePack, the feed over
 * WebSocket + MessagePack, a few calls over WebSocket + SchemaBinary,
 * the same answers and errors as the HTTP routes, and the credential rules (scopes, profile list,
 * revocation, rotation grace, rate limit, PII access log).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { Overview } from "../../schema/analytics.ts"
import { Campaigns } from "../../schema/analytics-campaigns.ts"
import { ExperimentResultsBody } from "../../schema/experiments.ts"
import { makeServiceClient, type ServiceClientOptions } from "../../src/rpc/client.ts"
import { RpcCredentials } from "../../src/rpc/credentials/service.ts"
import { drain, sansAsOf } from "../support/analytics.ts"
import { call, serveApp, TestServer, testSettings } from "../support/app.ts"
import { ingest } from "../support/events.ts"
import { seedCompletedPrePost } from "../support/experiments.ts"
import { ALL_RPC_SCOPES, mintRpcCredential, purchaseEvent, seedRpcWorld, settleOutbox } from "../support/rpc.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const withCredentials = <A, E, R>(run: (credentials: typeof RpcCredentials.Service) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(RpcCredentials, run).pipe(Effect.provide(RpcCredentials.layer))

/** A client of the test server with `secret`, HTTP + JSON unless told otherwise. */
const client = (secret: string, options: Partial<ServiceClientOptions> = {}) =>
  Effect.flatMap(TestServer, ({ url }) => makeServiceClient({ url, credential: secret, ...options }))

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("RPC parity", (it) => {
  describe("events", () => {
    it.effect("EventsIngest answers as POST /api/v1/events and is idempotent on the key, across both adapters", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const rpc = yield* client(world.secret)
        const event = purchaseEvent(crypto.randomUUID())
        const first = yield* rpc.EventsIngest({ profile_id: world.profileId, event })
        assert.isString(first.data.conversion_id)
        const again = yield* rpc.EventsIngest({ profile_id: world.profileId, event })
        assert.deepStrictEqual(again, first)
        // The same event through HTTP is the same outcome (the key, not the adapter, decides).
        const http = yield* ingest(world.key, event)
        assert.strictEqual(http.status, 200, http.text)
        assert.deepStrictEqual(http.json, first)
        // An event no definition lists: the same warning as HTTP.
        const signup = yield* rpc.EventsIngest({ profile_id: world.profileId, event: { event_name: "signup" } })
        assert.isNull(signup.data.conversion_id)
        assert.strictEqual(signup.meta?.warnings[0]?.code, "no_conversion_definition")
      }))

    it.effect("a refused event is the same tagged error as the HTTP code, and nothing is written", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const rpc = yield* client(world.secret)
        const bad = { event_name: "purchase", properties: { subject_ref: "ana@example.com" } }
        const http = yield* ingest(world.key, bad)
        assert.strictEqual(http.status, 400)
        assert.strictEqual(http.json.error.code, "invalid_parameter")
        const error = yield* Effect.flip(rpc.EventsIngest({ profile_id: world.profileId, event: bad }))
        assert.strictEqual(error._tag, "InvalidParameter")
        assert.strictEqual(error._tag === "InvalidParameter" ? error.reason : undefined, "subject_ref_personal_data")
        const blank = yield* Effect.flip(rpc.EventsIngest({ profile_id: world.profileId, event: { event_name: " " } }))
        assert.strictEqual(blank._tag, "ValidationError")
        const sql = yield* SqlClient
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM outcome_events WHERE profile_id = ${world.profileId}`
        assert.strictEqual(rows[0]?.n, 0)
      }))

    it.effect("EventsIngestBatch answers each event as EventsIngest would, in order; a retried batch is the same", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const rpc = yield* client(world.secret, { serialization: "msgpack" })
        const events = [purchaseEvent("b-1"), { event_name: "purchase", properties: { subject_ref: "+33 6 12 34 56 78" } }, purchaseEvent("b-3")]
        const first = yield* rpc.EventsIngestBatch({ profile_id: world.profileId, events })
        assert.deepStrictEqual(first.results.map((result) => result.ok), [true, false, true])
        const refused = first.results[1]
        assert.strictEqual(refused?.ok === false ? refused.error._tag : undefined, "InvalidParameter")
        const again = yield* rpc.EventsIngestBatch({ profile_id: world.profileId, events })
        assert.deepStrictEqual(again.results.filter((r) => r.ok), first.results.filter((r) => r.ok))
        const single = yield* rpc.EventsIngest({ profile_id: world.profileId, event: purchaseEvent("b-3") })
        const third = first.results[2]
        assert.deepStrictEqual(third?.ok === true ? third.data : undefined, single)
      }))
  })

  describe("reads and writes", () => {
    it.effect("every read answers what its HTTP route answers", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const rpc = yield* client(world.secret)
        const ingested = yield* rpc.EventsIngest({ profile_id: world.profileId, event: purchaseEvent("r-1") })
        const auth = { headers: { authorization: `Bearer ${world.key}` } }
        const profile_id = world.profileId

        const conversions = yield* rpc.ConversionsList({ profile_id, query: {} })
        assert.deepStrictEqual(conversions.data.map((c) => c.conversion_id), [ingested.data.conversion_id])

        const overview = yield* rpc.AnalyticsOverview({ profile_id, query: { days: 30 } })
        const httpOverview = yield* call("/api/v1/overview?days=30", auth)
        assert.strictEqual(httpOverview.status, 200, httpOverview.text)
        assert.deepStrictEqual(Schema.encodeSync(Overview)(overview).data, httpOverview.json.data)

        const timeseries = yield* rpc.AnalyticsTimeseries({ profile_id, query: { days: 7 } })
        assert.strictEqual(timeseries.data.length, 7)
        const campaigns = yield* rpc.CampaignsList({ profile_id, query: {} })
        const httpCampaigns = yield* call("/api/v1/campaigns", auth)
        assert.strictEqual(campaigns.data.length, httpCampaigns.json.data.length)

        const journey = yield* rpc.ConversionJourneyGet({ profile_id, conversion_id: ingested.data.outcome_event_id, query: {} })
        const httpJourney = yield* call(`/api/v1/conversions/${ingested.data.outcome_event_id}/journey`, auth)
        assert.strictEqual(httpJourney.status, 200, httpJourney.text)
        assert.deepStrictEqual(journey.data.map((row) => row.touch_id), httpJourney.json.data.map((row: any) => row.touch_id))

        const person = yield* rpc.PersonJourneyGet({ profile_id, query: { customer_key: "c-r-1" } })
        assert.deepStrictEqual(person.meta.person.conversions.map((c) => c.conversion_id), [ingested.data.conversion_id])
        const customers = yield* rpc.CustomersResolve({ profile_id, query: {} })
        const httpCustomers = yield* call("/api/v1/customers", auth)
        assert.deepStrictEqual(customers.data.map((c) => c.customer_profile_id), httpCustomers.json.data.map((c: any) => c.customer_profile_id))
        const customerId = customers.data[0]?.customer_profile_id ?? ""
        const customer = yield* rpc.CustomerJourneyGet({ profile_id, customer_id: customerId, query: {} })
        assert.strictEqual(customer.meta.person.customer_profile_id, customerId)

        const missing = yield* Effect.flip(rpc.ConversionJourneyGet({ profile_id, conversion_id: crypto.randomUUID(), query: {} }))
        assert.strictEqual(missing._tag, "ConversionNotFound")
      }))

    it.effect("ExperimentResultsGet answers what GET /api/v1/experiments/{id}/results answers; a draft is InvalidState", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const rpc = yield* client(world.secret)
        const profile_id = world.profileId
        const { key } = yield* seedApiKey(world, { scopes: ["analytics:read", "campaigns:apply"], rateLimitPerMinute: 1000 })
        const auth = { authorization: `Bearer ${key}` }
        const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)
        const created = yield* call("/api/v1/experiments", {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify({
            name: "Holdout",
            kind: "audience_holdout",
            metric: { conversion_key: "sale", measure: "value" },
            window: { start: day(-10), end: day(-2) },
            holdout_fraction: 0.1
          })
        })
        assert.strictEqual(created.status, 201, created.text)
        const id = created.json.data.id
        const draft = yield* Effect.flip(rpc.ExperimentResultsGet({ profile_id, experiment_id: id }))
        assert.strictEqual(draft._tag, "InvalidState")
        assert.strictEqual(draft._tag === "InvalidState" ? draft.reason : undefined, "experiment_draft")
        const missing = yield* Effect.flip(rpc.ExperimentResultsGet({ profile_id, experiment_id: crypto.randomUUID() }))
        assert.strictEqual(missing._tag, "NotFound")
        const started = yield* call(`/api/v1/experiments/${id}/start`, { method: "POST", headers: auth })
        assert.strictEqual(started.status, 200, started.text)
        const results = yield* rpc.ExperimentResultsGet({ profile_id, experiment_id: id })
        const http = yield* call(`/api/v1/experiments/${id}/results`, { headers: auth })
        assert.strictEqual(http.status, 200, http.text)
        assert.deepStrictEqual(Schema.encodeSync(ExperimentResultsBody)(results), http.json)
        assert.strictEqual(results.data.status, "completed")
      }))

    it.effect("AnalyticsOverview and CampaignsList take calibrated: the same calibration as the REST reads with ?calibrated=true", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const rpc = yield* client(world.secret)
        const profile_id = world.profileId
        const { key } = yield* seedApiKey(world, { scopes: ["analytics:read", "campaigns:apply", "campaigns:read"], rateLimitPerMinute: 1000 })
        const auth = { authorization: `Bearer ${key}` }
        const id = yield* seedCompletedPrePost(profile_id, key)
        // The seeded rows reach the rollups in the background: both reads of each pair must see them.
        yield* drain
        const overview = yield* rpc.AnalyticsOverview({ profile_id, query: { days: 60, calibrated: "true" } })
        const overviewHttp = yield* call("/api/v1/overview?days=60&calibrated=true", { headers: auth })
        assert.strictEqual(overviewHttp.status, 200, overviewHttp.text)
        // The same answer but for `meta.as_of`: the rollups may move on between two reads.
        assert.deepStrictEqual(sansAsOf(Schema.encodeSync(Overview)(overview)), sansAsOf(overviewHttp.json))
        assert.deepStrictEqual(overview.data.calibration?.map((f) => [f.campaign, f.experiment_id]), [["cmp_t", id]])
        const plain = yield* rpc.AnalyticsOverview({ profile_id, query: { days: 60 } })
        assert.strictEqual(plain.data.calibration, undefined)
        const campaigns = yield* rpc.CampaignsList({ profile_id, query: { days: 60, calibrated: "true" } })
        const campaignsHttp = yield* call("/api/v1/campaigns?days=60&calibrated=true", { headers: auth })
        assert.strictEqual(campaignsHttp.status, 200, campaignsHttp.text)
        assert.deepStrictEqual(sansAsOf(Schema.encodeSync(Campaigns)(campaigns)), sansAsOf(campaignsHttp.json))
        for (const row of campaigns.data) assert.deepStrictEqual(row.calibration, row.platform_id === "cmp_t" ? overview.data.calibration?.[0] : null)
      }))

    it.effect("recompute, replay status and erasure", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const rpc = yield* client(world.secret, { transport: "websocket", serialization: "binary" })
        const profile_id = world.profileId
        yield* rpc.EventsIngest({ profile_id, event: purchaseEvent("e-1") })
        const queued = yield* rpc.AttributionRecompute({ profile_id })
        const status = yield* rpc.ReplayStatusGet({ profile_id })
        assert.strictEqual(status.data?.job_id, queued.data.job_id)
        const erased = yield* rpc.CustomersErase({ profile_id, erasure: { request_ref: "gdpr-1", customer_key: "c-e-1" } })
        assert.strictEqual(erased.data.request_ref, "gdpr-1")
        const again = yield* rpc.CustomersErase({ profile_id, erasure: { request_ref: "gdpr-1", customer_key: "c-e-1" } })
        assert.strictEqual(again.data.erasure_id, erased.data.erasure_id)
      }))
  })

  describe("credentials", () => {
    it.effect("a call outside the credential's scopes or profiles is refused as over HTTP", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const other = yield* seedProfile()
        const narrow = yield* mintRpcCredential({ name: "reader", scopes: ["conversions:read"], profileIds: [world.profileId] })
        const rpc = yield* client(narrow.secret)
        const scope = yield* Effect.flip(rpc.AnalyticsOverview({ profile_id: world.profileId, query: {} }))
        assert.strictEqual(scope._tag, "InsufficientScope")
        assert.strictEqual(scope._tag === "InsufficientScope" ? scope.reason : undefined, "missing_scope:analytics:read")
        // Each call's refusal names its request id, as the HTTP envelope does; a new one per call.
        const scopeRequestId = scope._tag === "InsufficientScope" ? scope.request_id : undefined
        assert.match(scopeRequestId ?? "", /^req_[0-9a-f]{32}$/)
        const listed = yield* rpc.ConversionsList({ profile_id: world.profileId, query: {} })
        assert.deepStrictEqual(listed.data, [])
        const unlisted = yield* Effect.flip(rpc.ConversionsList({ profile_id: other.profileId, query: {} }))
        assert.strictEqual(unlisted._tag, "NotFound")
        const unlistedRequestId = unlisted._tag === "NotFound" ? unlisted.request_id : undefined
        assert.match(unlistedRequestId ?? "", /^req_[0-9a-f]{32}$/)
        assert.notStrictEqual(unlistedRequestId, scopeRequestId)
        const unknown = yield* Effect.flip(
          (yield* client(world.secret)).ConversionsList({ profile_id: crypto.randomUUID(), query: {} })
        )
        assert.strictEqual(unknown._tag, "NotFound")
      }))

    it.effect("a revoked credential is refused at its next call; a rotated one works 48 hours beside its successor", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const rotated = yield* withCredentials((credentials) => credentials.rotate(world.credentialId))
        assert.strictEqual(rotated.rotated_from?.id, world.credentialId)
        const expiresIn = Date.parse(rotated.rotated_from?.expires_at ?? "") - Date.now()
        assert.isTrue(expiresIn > 47.9 * 3600_000 && expiresIn <= 48 * 3600_000, String(expiresIn))
        assert.deepStrictEqual(rotated.credential.scopes, ALL_RPC_SCOPES)
        const old = yield* client(world.secret)
        const successor = yield* client(rotated.secret)
        yield* old.ConversionsList({ profile_id: world.profileId, query: {} })
        yield* successor.ConversionsList({ profile_id: world.profileId, query: {} })

        yield* withCredentials((credentials) => credentials.revoke(rotated.credential.id))
        const refused = yield* Effect.flip(successor.ConversionsList({ profile_id: world.profileId, query: {} }))
        assert.strictEqual(refused._tag, "Unauthorized")
        const garbage = yield* Effect.flip((yield* client("svc_rpc_nope")).ServiceStatus())
        assert.strictEqual(garbage._tag, "Unauthorized")
      }))

    it.effect("the cluster calls: a status for any credential, a revocation-epoch bump only with profiles:write", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const reader = yield* client(world.secret)
        const status = yield* reader.ServiceStatus()
        assert.strictEqual(status.database.reachable, true)
        const refused = yield* Effect.flip(reader.ProfileBumpRevocationEpoch({ profile_id: world.profileId }))
        assert.strictEqual(refused._tag, "InsufficientScope")
        assert.strictEqual(refused._tag === "InsufficientScope" ? refused.reason : undefined, "missing_scope:profiles:write")
        const writer = yield* mintRpcCredential({ name: "ops", scopes: ["profiles:write"], profileIds: [world.profileId] })
        const bumped = yield* (yield* client(writer.secret)).ProfileBumpRevocationEpoch({ profile_id: world.profileId })
        assert.strictEqual(bumped.revocation_epoch, 1)
        const elsewhere = yield* Effect.flip((yield* client(writer.secret)).ProfileGetState({ profile_id: crypto.randomUUID() }))
        assert.strictEqual(elsewhere._tag, "NotFound")
      }))

    it.effect("the credential's per-minute allowance is enforced with the HTTP error", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const limited = yield* mintRpcCredential({ name: "tight", scopes: ["conversions:read"], rateLimitPerMinute: 2 })
        const rpc = yield* client(limited.secret)
        yield* rpc.ConversionsList({ profile_id: world.profileId, query: {} })
        yield* rpc.ConversionsList({ profile_id: world.profileId, query: {} })
        const error = yield* Effect.flip(rpc.ConversionsList({ profile_id: world.profileId, query: {} }))
        assert.strictEqual(error._tag, "RateLimitExceeded")
      }))

    it.effect("a customer read writes a PII access log row naming the credential", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const rpc = yield* client(world.secret)
        yield* rpc.CustomersResolve({ profile_id: world.profileId, query: {} })
        const sql = yield* SqlClient
        const rows = yield* sql<{ actor_kind: string; actor_id: string; route: string; result: string; request_id: string | null }>`
          SELECT actor_kind, actor_id, route, result, request_id FROM pii_access_log WHERE profile_id = ${world.profileId}`
        assert.deepStrictEqual(rows.map(({ request_id: _id, ...row }) => row), [
          { actor_kind: "service", actor_id: world.credentialId, route: "RPC CustomersResolve", result: "allowed" }
        ])
        // The call's request id, generated per RPC call as HTTP does per request.
        assert.match(rows[0]?.request_id ?? "", /^req_[0-9a-f]{32}$/)
      }))
  })

  describe("outcome.recorded feed", () => {
    it.effect("streams the replay's events in order over WebSocket + MessagePack and resumes from a cursor", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const writer = yield* client(world.secret)
        const ids: Array<string> = []
        for (const key of ["f-1", "f-2", "f-3"]) {
          ids.push((yield* writer.EventsIngest({ profile_id: world.profileId, event: purchaseEvent(key) })).data.outcome_event_id)
        }
        yield* settleOutbox(world.profileId)
        const rpc = yield* client(world.secret, { transport: "websocket", serialization: "msgpack" })
        const head = yield* rpc.OutcomesRecordedFeed({ profile_id: world.profileId, page_size: 2 }).pipe(Stream.take(2), Stream.runCollect)
        assert.deepStrictEqual(head.map((item) => item.event.data.outcome_event_id), ids.slice(0, 2))
        const cursor = head[1]?.cursor ?? ""
        assert.notStrictEqual(cursor, "")
        const rest = yield* rpc.OutcomesRecordedFeed({ profile_id: world.profileId, cursor }).pipe(Stream.take(1), Stream.runCollect)
        assert.deepStrictEqual(rest.map((item) => item.event.data.outcome_event_id), ids.slice(2))
        // The same as the HTTP replay, contact included (the credential holds customers:read).
        const http = yield* call("/api/v1/outcomes/recorded", { headers: { authorization: `Bearer ${world.key}` } })
        assert.deepStrictEqual([...head, ...rest].map((item) => item.event.id), http.json.data.map((event: any) => event.id))
      }))
  })
})
