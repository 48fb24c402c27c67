/**
 * The sandbox CRM, served by the service under /sandbox/crm/, read and written through the
 * `Crm` port over real HTTP: seeded data, paging, the `updated_since` cursor, a deal moved by
 * the port and by `PATCH _state`, the signed pushes a subscribed callback receives, arrivals,
 * and a fault retried through the port.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { createHmac } from "node:crypto"
import { CrmAdapter } from "../../src/connections/providers/crm/live.ts"
import { Crm } from "../../src/connections/providers/crm/port.ts"
import { CrmWorld } from "../../sandbox/crm/world.ts"
import { type HttpResult, serveApp, testSettings } from "../support/app.ts"
import { callbackCatcher, LOOPBACK_CALLBACKS } from "../support/providers.ts"
import { appSecret, consent, json, providerHttpLayer, session, withOne500 } from "./sandbox-harness.ts"

const PORTAL = "crm_portal_1001"
const OTHER_PORTAL = "crm_portal_1002"

/** The documented scheme: `sha256=` hex HMAC-SHA256 of `<timestamp>.<raw body>` under the app secret. */
const signedWell = (headers: Record<string, string | Array<string> | undefined>, body: string) => {
  const timestamp = String(headers["x-signature-timestamp"])
  const expected = `sha256=${createHmac("sha256", appSecret("crm")).update(`${timestamp}.${body}`).digest("hex")}`
  return headers["x-signature-256"] === expected && Math.abs(Date.now() / 1000 - Number(timestamp)) < 300
}

// Pushes go to a callbackCatcher on 127.0.0.1: an origin the operator opens (decision 0109).
const settings = testSettings({ providers: { ...testSettings().providers, ...LOOPBACK_CALLBACKS } })
// Fresh: the app built CrmAdapter already (layers are memoised by reference) over its own client.
const app = Layer.fresh(CrmAdapter).pipe(Layer.provideMerge(providerHttpLayer), Layer.provideMerge(serveApp(settings)))

layer(app, { timeout: "90 seconds", excludeTestServices: true })("sandbox crm through the Crm port", (it) => {
  it.effect("the seeded world is deterministic and is what the sandbox serves", () =>
    Effect.gen(function*() {
      const first = new CrmWorld().state()
      assert.deepStrictEqual(first, new CrmWorld().state())
      assert.strictEqual(first.deals.filter((deal) => deal.account_id === PORTAL).length, 40)
      assert.strictEqual(first.pipelines.filter((pipeline) => pipeline.account_id === PORTAL).length, 2)
      const served = yield* json("GET", "/sandbox/crm/_state")
      assert.strictEqual(served.status, 200)
      assert.deepStrictEqual(served.json.pipelines, first.pipelines)
      assert.deepStrictEqual(served.json.deals, first.deals)
      assert.strictEqual(served.json.write_count, 0)
      const sales = first.pipelines.find((pipeline) => pipeline.id === "pipe_1001_sales")
      assert.deepStrictEqual(sales?.stages.map((stage) => stage.label.es), [
        "Nuevo contacto",
        "Cualificado",
        "Propuesta enviada",
        "Ganado",
        "Perdido"
      ])
    }))

  it.effect("pipelines, deals (paged, since a time) and one deal through the port", () =>
    Effect.gen(function*() {
      const crm = yield* Crm
      const token = yield* consent("crm")
      const grant = session("crm", PORTAL, token)

      const pipelines = yield* Stream.runCollect(crm.pipelines(grant))
      assert.deepStrictEqual(pipelines.map((pipeline) => pipeline.id), ["pipe_1001_appointments", "pipe_1001_sales"])
      assert.deepStrictEqual(pipelines[1]!.stages.map((stage) => stage.kind), ["open", "open", "open", "won", "lost"])

      const deals = yield* Stream.runCollect(crm.deals(grant))
      assert.strictEqual(deals.length, 40)
      assert.strictEqual(new Set(deals.map((deal) => deal.id)).size, 40)
      const times = deals.map((deal) => deal.updated_at)
      assert.deepStrictEqual(times, [...times].sort())
      assert.match(deals[0]!.contact.email ?? "", /@crm\.example$/)
      assert.match(deals[0]!.contact.id, /^contact_1001_/)

      const since = deals[30]!.updated_at
      const recent = yield* Stream.runCollect(crm.deals(grant, { updatedSince: new Date(since) }))
      assert.deepStrictEqual(recent.map((deal) => deal.id), deals.slice(30).map((deal) => deal.id))

      // Small pages over plain HTTP: the cursor walks every deal once.
      const seen: Array<string> = []
      let after: string | null = ""
      while (after !== null) {
        const page: HttpResult = yield* json("GET", `/sandbox/crm/v1/accounts/${PORTAL}/deals?limit=7&after=${after}`, undefined, token)
        assert.strictEqual(page.status, 200)
        assert.isAtMost(page.json.data.length, 7)
        seen.push(...page.json.data.map((deal: { id: string }) => deal.id))
        after = page.json.paging.next
      }
      assert.deepStrictEqual(seen, deals.map((deal) => deal.id))

      const one = yield* crm.getDeal(grant, deals[0]!.id)
      assert.deepStrictEqual(one, deals[0])

      // A portal the grant does not reach, and a deal that does not exist, are the provider refusing.
      const elsewhere = yield* Effect.flip(Stream.runCollect(crm.deals(session("crm", OTHER_PORTAL, token))))
      assert.strictEqual(elsewhere._tag, "ProviderRefused")
      const missing = yield* Effect.flip(crm.getDeal(grant, "deal_nope"))
      assert.strictEqual(missing._tag, "ProviderRefused")
      if (missing._tag === "ProviderRefused") assert.strictEqual(missing.status, 404)

      const bad = yield* json("GET", `/sandbox/crm/v1/accounts/${PORTAL}/deals?updated_since=yesterday`, undefined, token)
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(bad.json.error.code, "invalid_parameter")

      const both = session("crm", OTHER_PORTAL, yield* consent("crm", { persona: "two_accounts" }))
      assert.strictEqual((yield* Stream.runCollect(crm.deals(both))).length, 40)
    }))

  it.effect("a deal moved through the port or by PATCH _state pushes a signed deal.stage_changed", () =>
    Effect.gen(function*() {
      const crm = yield* Crm
      const hooks = yield* callbackCatcher
      const token = yield* consent("crm")
      const grant = session("crm", PORTAL, token)
      const subscribed = yield* json("POST", `/sandbox/crm/v1/accounts/${PORTAL}/subscriptions`, { callback_url: hooks.url }, token)
      assert.strictEqual(subscribed.status, 200)

      const before = (yield* json("GET", "/sandbox/crm/_state")).json
      const deal = before.deals.find((candidate: { id: string }) => candidate.id === "deal_1001_0002")
      const pipeline = before.pipelines.find((candidate: { id: string }) => candidate.id === deal.pipeline_id)
      const target = pipeline.stages.find((stage: { id: string }) => stage.id !== deal.stage_id)

      const moved = yield* crm.moveDeal(grant, deal.id, target.id)
      assert.strictEqual(moved.stage_id, target.id)
      assert.isAbove(Date.parse(moved.updated_at), Date.parse(deal.updated_at))
      const afterWrite = (yield* json("GET", "/sandbox/crm/_state")).json
      assert.strictEqual(afterWrite.write_count, before.write_count + 1)
      assert.strictEqual(hooks.received.length, 1)

      const back = yield* json("PATCH", "/sandbox/crm/_state", { objects: [{ id: deal.id, stage_id: deal.stage_id }] })
      assert.strictEqual(back.status, 200)
      assert.strictEqual(hooks.received.length, 2)
      for (const push of hooks.received) assert.isTrue(signedWell(push.headers, push.body))
      const [first, second] = hooks.received.map((push) => JSON.parse(push.body))
      assert.strictEqual(first.type, "deal.stage_changed")
      assert.strictEqual(first.data.object.stage_id, target.id)
      assert.strictEqual(first.data.previous_stage_id, deal.stage_id)
      assert.strictEqual(second.data.object.stage_id, deal.stage_id)
      assert.strictEqual(second.account_id, PORTAL)
      assert.notStrictEqual(first.id, second.id)
      assert.strictEqual((yield* crm.getDeal(grant, deal.id)).stage_id, deal.stage_id)

      // A stage of another pipeline is refused and changes nothing.
      const otherPipeline = before.pipelines.find((candidate: { id: string; account_id: string }) =>
        candidate.id !== deal.pipeline_id && candidate.account_id === PORTAL
      )
      const refused = yield* json("PATCH", "/sandbox/crm/_state", {
        objects: [{ id: deal.id, stage_id: otherPipeline.stages[0].id }]
      })
      assert.strictEqual(refused.status, 400)
      assert.strictEqual((yield* crm.getDeal(grant, deal.id)).stage_id, deal.stage_id)
      assert.strictEqual(hooks.received.length, 2)

      // A deal created in the CRM arrives as deal.created.
      const arrived = yield* json("PATCH", "/sandbox/crm/_state", {
        arrive: { kind: "deal", name: "Walk-in", amount_minor: 12_500, contact: { email: "walkin@example.com", phone: "+34600000001" } }
      })
      assert.strictEqual(arrived.status, 201)
      assert.strictEqual(hooks.received.length, 3)
      const created = JSON.parse(hooks.received[2]!.body)
      assert.isTrue(signedWell(hooks.received[2]!.headers, hooks.received[2]!.body))
      assert.strictEqual(created.type, "deal.created")
      assert.deepStrictEqual(created.data.object, arrived.json.deal)
      assert.strictEqual(created.data.object.contact.email, "walkin@example.com")
      assert.strictEqual((yield* crm.getDeal(grant, created.data.object.id)).amount_minor, 12_500)
      const bad = yield* json("PATCH", "/sandbox/crm/_state", { arrive: { kind: "deal", amount_minor: -1 } })
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(hooks.received.length, 3)
    }))

  it.effect("a write without the write permission is refused; a throttle and a 500 are retried through the port", () =>
    Effect.gen(function*() {
      const crm = yield* Crm
      const reader = session("crm", PORTAL, yield* consent("crm", { persona: "no_manage_ads_permission" }))
      const state = (yield* json("GET", "/sandbox/crm/_state")).json
      const deal = state.deals.find((candidate: { id: string }) => candidate.id === "deal_1001_0003")
      const pipeline = state.pipelines.find((candidate: { id: string }) => candidate.id === deal.pipeline_id)
      const denied = yield* Effect.flip(crm.moveDeal(reader, deal.id, pipeline.stages[0].id))
      assert.strictEqual(denied._tag, "ProviderPermissionMissing")
      assert.strictEqual((yield* json("GET", "/sandbox/crm/_state")).json.write_count, state.write_count)

      const token = yield* consent("crm")
      const grant = session("crm", PORTAL, token)
      assert.strictEqual((yield* json("POST", "/sandbox/crm/_faults", { throttle: 1 })).status, 200)
      const started = Date.now()
      assert.strictEqual((yield* crm.getDeal(grant, deal.id)).id, deal.id)
      assert.isAtLeast(Date.now() - started, 900, "Retry-After: 1 was honoured")
      assert.strictEqual((yield* json("POST", "/sandbox/crm/_faults", {})).json.throttle, 0)

      const retried = yield* withOne500("crm", crm.getDeal(grant, deal.id))
      assert.strictEqual(retried.left, 0, "the 500 was answered")
      assert.strictEqual(retried.result.id, deal.id)
    }))
})
