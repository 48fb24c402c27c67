/**
 * The chat surfaces (decision 0093) over real HTTP against the ad-platform and chat_app_a
 * sandboxes the app serves: click-to-chat ads keyset by `ad_id`, the welcome message (configured,
 * `null`, 404 for an ad the platform does not show), 409 without a usable connection; templates
 * and the analytics state machine (409 `insights_enabling` with `retry_after_seconds`, then
 * figures over UTC days; 422 `insights_unsupported`; 404 `template_not_found`; the 90-day range;
 * the 15-minute cache).
 */
import { assert, layer } from "@effect/vitest"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"
import { AppConfig } from "../../src/platform/config.ts"
import { SecretBox } from "../../src/platform/secret-box.ts"
import { SandboxRoutes } from "../../sandbox/routes.ts"
import { call, type HttpResult, serveApp, TestServer } from "../support/app.ts"
import { bearer, channelProfile, connectChannel, narrowKey } from "../support/channels.ts"
import { eventually } from "../support/eventually.ts"
import { freePort, ownPortSettings } from "../support/providers.ts"
import { keyAuth } from "../support/sandbox-world.ts"

/**
 * The service on its own port and the sandboxes served alone on a second one (as `npm run sandbox`
 * serves them), so the template media (the sandbox's test media) comes from an origin other than
 * the service's: a media fetch never reaches this service itself (issue 29 item 4). The sandboxes
 * check API keys against the app's credential store, so a profile's key opens its own world.
 */
const Setup = Layer.unwrap(Effect.gen(function*() {
  const port = yield* freePort
  const sandboxPort = yield* freePort
  const settings = ownPortSettings(port, {
    providers: { servesSandbox: false, sandboxUrl: `http://127.0.0.1:${sandboxPort}/sandbox` }
  })
  const sandboxes = HttpRouter.serve(SandboxRoutes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provide(NodeHttpServer.layer(createServer, { port: sandboxPort, host: "127.0.0.1" })),
    Layer.provide(SecretBox.layer),
    // A router of their own: built on the app's memo map they would join the app's router (and
    // the service would serve /sandbox/ itself again).
    Layer.provide(Layer.effect(Layer.CurrentMemoMap)(Layer.makeMemoMap))
  )
  return sandboxes.pipe(Layer.provideMerge(serveApp(settings)))
}))

/** A test-control call on the key's profile's world of the sandboxes served alone (decision 0109). */
const sandbox = (key: string, provider: string, method: string, path: string, body?: unknown) =>
  Effect.gen(function*() {
    const settings = yield* AppConfig
    const response = yield* Effect.promise(() =>
      fetch(`${settings.providers.sandboxUrl}/${provider}/${path}`, {
        method,
        headers: { "content-type": "application/json", ...keyAuth(key) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
    )
    const text = yield* Effect.promise(() => response.text())
    return { status: response.status, headers: response.headers, text, json: text.length > 0 ? JSON.parse(text) : undefined } as HttpResult
  })

const SCOPES = ["chat_app_a:read"]
const ACCOUNT = "ca_waba_0001"

interface ChatAd {
  readonly ad_id: string
  readonly destination: { readonly type: string; readonly phone_number: string | null; readonly page_id: string | null }
  readonly call_to_action_type: string | null
  readonly greeting: string | null
  readonly greeting_status: string | null
}

const patchChat = (key: string, object: Record<string, unknown>) =>
  Effect.flatMap(sandbox(key, "chat_app_a", "PATCH", "_state", { objects: [object] }), (answer) =>
    Effect.sync(() => assert.isBelow(answer.status, 300, answer.text)))

const analytics = (key: string, name: string, query: string) => call(`/api/v1/whatsapp/templates/${name}/analytics?${query}`, bearer(key))

layer(Setup, { timeout: "120 seconds", excludeTestServices: true })("chat surfaces", (it) => {
  it.effect("click-to-chat ads keyset by ad_id; welcome message, welcome null, 404; 409 without a connection", () =>
    Effect.gen(function*() {
      const { key } = yield* channelProfile(SCOPES)
      // The service serves no /sandbox/ of its own here: the sandboxes answer on their port only.
      assert.strictEqual((yield* call("/sandbox/adplatform/_state", bearer(key))).status, 404)
      const none = yield* call("/api/v1/partner/whatsapp/ads", bearer(key))
      assert.strictEqual(none.status, 409, none.text)
      assert.strictEqual(none.json.error.code, "adplatform_connection_required")
      const noneWelcome = yield* call("/api/v1/partner/whatsapp/ads/1/welcome-message", bearer(key))
      assert.strictEqual(noneWelcome.status, 409, noneWelcome.text)

      const connection = yield* connectChannel(key, "adplatform")
      const all = yield* call("/api/v1/partner/whatsapp/ads?limit=100", bearer(key))
      assert.strictEqual(all.status, 200, all.text)
      const ads = all.json.data as ReadonlyArray<ChatAd>
      assert.isAbove(ads.length, 1, all.text)
      assert.deepStrictEqual(ads.map((a) => a.ad_id), [...ads.map((a) => a.ad_id)].sort(), "ad_id order")
      for (const ad of ads) {
        assert.include(["chat_app_a", "page_messenger", "social_dm"], ad.destination.type)
        assert.notProperty(ad, "spend")
      }
      const first = ads[0]
      assert.strictEqual(first?.call_to_action_type, "WHATSAPP_MESSAGE")
      assert.strictEqual(first?.greeting_status, "active")
      assert.isString(first?.destination.phone_number)

      // The state names every ad of the connected account: the website ones are left out.
      const state = yield* sandbox(key, "adplatform", "GET", "_state")
      assert.strictEqual(state.status, 200, state.text)
      const account = (state.json.accounts as ReadonlyArray<{
        id: string
        campaigns: ReadonlyArray<{ ad_sets: ReadonlyArray<{ ads: ReadonlyArray<{ id: string; destination_type: string | null }> }> }>
      }>).find((a) => a.id === connection.provider_account_id)
      assert.isDefined(account, state.text)
      const stateAds = account?.campaigns.flatMap((c) => c.ad_sets.flatMap((s) => s.ads)) ?? []
      assert.deepStrictEqual(
        ads.map((a) => a.ad_id),
        stateAds.filter((a) => a.destination_type !== null).map((a) => a.id).sort()
      )

      // Keyset: one at a time walks the same list.
      const walked: Array<string> = []
      let cursor: string | null = null
      do {
        const page: HttpResult = yield* call(`/api/v1/partner/whatsapp/ads?limit=1${cursor === null ? "" : `&cursor=${cursor}`}`, bearer(key))
        assert.strictEqual(page.status, 200, page.text)
        walked.push(...page.json.data.map((a: ChatAd) => a.ad_id))
        cursor = page.json.pagination.has_next ? page.json.pagination.cursor : null
      } while (cursor !== null && walked.length <= ads.length)
      assert.deepStrictEqual(walked, ads.map((a) => a.ad_id))

      const welcome = yield* call(`/api/v1/partner/whatsapp/ads/${first?.ad_id}/welcome-message`, bearer(key))
      assert.strictEqual(welcome.status, 200, welcome.text)
      assert.strictEqual(welcome.json.data.ad_id, first?.ad_id)
      assert.strictEqual(welcome.json.data.welcome.greeting, "Hi! How can we help you today?")
      assert.strictEqual(welcome.json.data.welcome.prefilled_text, "I'd like to know more")
      assert.deepStrictEqual(welcome.json.data.welcome.ice_breakers[0], { title: "Prices", response: "Our prices start at 49." })

      const website = stateAds.find((a) => a.destination_type === null)
      assert.isDefined(website, "the account has a website ad")
      const unset = yield* call(`/api/v1/partner/whatsapp/ads/${website?.id}/welcome-message`, bearer(key))
      assert.strictEqual(unset.status, 200, unset.text)
      assert.isNull(unset.json.data.welcome)

      const unknown = yield* call("/api/v1/partner/whatsapp/ads/999999999999/welcome-message", bearer(key))
      assert.strictEqual(unknown.status, 404, unknown.text)
      assert.strictEqual(unknown.json.error.code, "not_found")

      const { key: other } = yield* channelProfile([])
      const refused = yield* call("/api/v1/partner/whatsapp/ads", bearer(other))
      assert.strictEqual(refused.status, 403, refused.text)
      assert.strictEqual(refused.json.error.code, "insufficient_scope")
    }))

  it.effect("templates; analytics: insights_enabling first, then figures over UTC days, cached; 404, 422, range", () =>
    Effect.gen(function*() {
      const { key, profile } = yield* channelProfile(SCOPES)
      const none = yield* analytics(key, "welcome", "start=2026-01-01&end=2026-01-10")
      assert.strictEqual(none.status, 409, none.text)
      assert.strictEqual(none.json.error.code, "chat_app_a_connection_required")

      const connection = yield* connectChannel(key, "chat_app_a")
      const templates = yield* call("/api/v1/whatsapp/templates", bearer(key))
      assert.strictEqual(templates.status, 200, templates.text)
      assert.includeDeepMembers(
        templates.json.data.map((t: { name: string; language: string; status: string }) => [t.name, t.language, t.status]),
        [["welcome", "en_US", "APPROVED"], ["spring_promo", "en_US", "PENDING"]]
      )

      const range = "start=2026-01-01&end=2026-01-10"
      const enabling = yield* analytics(key, "welcome", range)
      assert.strictEqual(enabling.status, 409, enabling.text)
      assert.strictEqual(enabling.json.error.code, "insights_enabling")
      assert.isAtLeast(enabling.json.error.retry_after_seconds, 1)
      assert.strictEqual(enabling.headers.get("retry-after"), String(enabling.json.error.retry_after_seconds))

      const ready = yield* eventually(analytics(key, "welcome", range), (answer) => answer.status !== 409, {
        within: "15 seconds",
        what: "template insights switched on"
      })
      assert.strictEqual(ready.status, 200, ready.text)
      const data = ready.json.data
      assert.strictEqual(data.connection_id, connection.id)
      assert.deepStrictEqual(data.template.languages, ["en_US"])
      assert.strictEqual(data.start, "2026-01-01")
      assert.strictEqual(data.end, "2026-01-10")
      assert.strictEqual(data.currency, "USD")
      const days: ReadonlyArray<{ date: string; sent: number; delivered: number; read: number; button_clicks: number; cost_minor: number }> = data.daily
      assert.deepStrictEqual(days.map((d) => d.date), Array.from({ length: 10 }, (_, i) => `2026-01-${String(i + 1).padStart(2, "0")}`))
      for (const field of ["sent", "delivered", "read", "button_clicks", "cost_minor"] as const) {
        assert.strictEqual(data.totals[field], days.reduce((sum, d) => sum + d[field], 0), field)
      }
      assert.isAbove(data.totals.sent, 0)

      // Cached: a paused template (the platform then reports nothing) does not change the answer for 15 minutes.
      const [welcome] = (templates.json.data as ReadonlyArray<{ id: string; name: string }>).filter((t) => t.name === "welcome")
      yield* patchChat(key, { id: welcome?.id ?? "", status: "PAUSED" })
      const cached = yield* analytics(key, "welcome", range)
      assert.strictEqual(cached.status, 200, cached.text)
      assert.deepStrictEqual(cached.json.data, data)
      const fresh = yield* analytics(key, "welcome", "start=2026-01-01&end=2026-01-09")
      assert.strictEqual(fresh.status, 200, fresh.text)
      assert.strictEqual(fresh.json.data.totals.sent, 0, "another range is read anew")
      yield* patchChat(key, { id: welcome?.id ?? "", status: "APPROVED" })

      const unknown = yield* analytics(key, "no_such_template", range)
      assert.strictEqual(unknown.status, 404, unknown.text)
      assert.strictEqual(unknown.json.error.code, "template_not_found")
      const wrongLanguage = yield* analytics(key, "welcome", `${range}&language=pt_BR`)
      assert.strictEqual(wrongLanguage.status, 404, wrongLanguage.text)
      assert.strictEqual(wrongLanguage.json.error.code, "template_not_found")

      const tooLong = yield* analytics(key, "welcome", "start=2026-01-01&end=2026-04-01")
      assert.strictEqual(tooLong.status, 400, tooLong.text)
      assert.strictEqual(tooLong.json.error.code, "invalid_date_range")
      const ninety = yield* analytics(key, "welcome", "start=2026-01-01&end=2026-03-31")
      assert.strictEqual(ninety.status, 200, ninety.text)
      assert.strictEqual(ninety.json.data.daily.length, 90)
      const reversed = yield* analytics(key, "welcome", "start=2026-01-10&end=2026-01-01")
      assert.strictEqual(reversed.status, 400, reversed.text)
      assert.strictEqual(reversed.json.error.code, "invalid_date_range")
      const notADay = yield* analytics(key, "welcome", "start=2026-02-30&end=2026-03-01")
      assert.strictEqual(notADay.status, 400, notADay.text)

      const otherConnection = yield* analytics(key, "welcome", `${range}&connection_id=${crypto.randomUUID()}`)
      assert.strictEqual(otherConnection.status, 404, otherConnection.text)

      yield* Effect.ensuring(
        Effect.gen(function*() {
          yield* patchChat(key, { id: ACCOUNT, insights_supported: false })
          const unsupported = yield* analytics(key, "welcome", "start=2026-02-01&end=2026-02-02")
          assert.strictEqual(unsupported.status, 422, unsupported.text)
          assert.strictEqual(unsupported.json.error.code, "insights_unsupported")
        }),
        Effect.ignore(patchChat(key, { id: ACCOUNT, insights_supported: true }))
      )

      const reader = yield* narrowKey(profile, ["conversations:read"])
      const refused = yield* analytics(reader, "welcome", range)
      assert.strictEqual(refused.status, 403, refused.text)
      assert.strictEqual(refused.json.error.code, "insufficient_scope")
    }))

  it.effect("template create: header_text or header_media (fetched: type, size, reachable, public), 409 on a used name, scope", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const settings = yield* AppConfig
      const { key, profile } = yield* channelProfile(["chat_app_a", "chat_app_a:read"])
      yield* connectChannel(key, "chat_app_a")
      const create = (body: Record<string, unknown>, as = key) =>
        call("/api/v1/whatsapp/templates", bearer(as, "POST", { language: "en_US", category: "MARKETING", body_text: "Hello {{1}}", ...body }))
      // The sandbox's test media, on the sandboxes' own origin (not the service's).
      const mediaBase = `${settings.providers.sandboxUrl}/chat_app_a/media`
      assert.notStrictEqual(new URL(mediaBase).origin, new URL(url).origin)
      const media = (file: string, bytes?: number) => `${mediaBase}/${file}${bytes === undefined ? "" : `?bytes=${bytes}`}`
      const name = () => `promo_${crypto.randomUUID().slice(0, 8).replace(/-/g, "")}`
      const templatesAtPlatform = Effect.map(sandbox(key, "chat_app_a", "GET", "_state"), (state) => {
        assert.strictEqual(state.status, 200, state.text)
        return state.json.templates as ReadonlyArray<{ name: string; status: string }>
      })

      const both = yield* create({ name: name(), header_text: "Hi", header_media: { format: "IMAGE", url: media("a.jpg") } })
      assert.strictEqual(both.status, 400, both.text)
      assert.strictEqual(both.json.error.code, "validation_error")
      assert.include(both.json.error.message, "header_media")

      const withImage = name()
      const created = yield* create({ name: withImage, header_media: { format: "IMAGE", url: media("banner.jpg", 2048) } })
      assert.strictEqual(created.status, 201, created.text)
      assert.strictEqual(created.json.data.name, withImage)
      assert.strictEqual(created.json.data.status, "PENDING")
      const withText = name()
      const texted = yield* create({ name: withText, header_text: "Spring sale" })
      assert.strictEqual(texted.status, 201, texted.text)
      const again = yield* create({ name: withText, header_text: "Spring sale" })
      assert.strictEqual(again.status, 409, again.text)
      assert.strictEqual(again.json.error.code, "invalid_state")
      assert.strictEqual(again.json.error.reason, "template_exists")

      const MB = 1024 * 1024
      const refusals: ReadonlyArray<readonly [Record<string, unknown>, number, string]> = [
        [{ format: "IMAGE", url: media("notes.txt") }, 422, "invalid_content"],
        [{ format: "VIDEO", url: media("banner.jpg") }, 422, "invalid_content"],
        [{ format: "IMAGE", url: `${mediaBase}/missing.gif` }, 422, "invalid_content"],
        // This service's own origin is never fetched (issue 29 item 4), whatever the path.
        [{ format: "IMAGE", url: `${url}/anything.jpg` }, 422, "invalid_content"],
        [{ format: "IMAGE", url: media("big.jpg", 5 * MB + 1) }, 413, "payload_too_large"],
        [{ format: "VIDEO", url: media("big.mp4", 16 * MB + 1) }, 413, "payload_too_large"],
        [{ format: "IMAGE", url: "https://127.0.0.1/banner.jpg" }, 422, "invalid_content"],
        [{ format: "IMAGE", url: "https://169.254.169.254/latest/meta-data" }, 422, "invalid_content"],
        [{ format: "IMAGE", url: "https://localhost/banner.jpg" }, 422, "invalid_content"],
        [{ format: "IMAGE", url: "http://example.com/banner.jpg" }, 422, "invalid_content"]
      ]
      for (const [header, status, code] of refusals) {
        const refused = yield* create({ name: name(), header_media: header })
        assert.strictEqual(refused.status, status, `${JSON.stringify(header)}: ${refused.text}`)
        assert.strictEqual(refused.json.error.code, code)
        // Refused for the address itself, before any connection (not merely unreachable).
        if (String(header["url"]).startsWith("https://")) assert.include(refused.json.error.message, "private address")
      }
      const fits = yield* create({ name: name(), header_media: { format: "IMAGE", url: media("max.png", 5 * MB) } })
      assert.strictEqual(fits.status, 201, fits.text)
      const names = (yield* templatesAtPlatform).map((t) => t.name)
      assert.include(names, withImage)
      assert.strictEqual(names.filter((n) => n.startsWith("promo_")).length, 3, "refused templates never reached the platform")

      const reader = yield* narrowKey(profile, ["chat_app_a:read"])
      const refused = yield* create({ name: name(), header_text: "x" }, reader)
      assert.strictEqual(refused.status, 403, refused.text)
      assert.strictEqual(refused.json.error.code, "insufficient_scope")
    }))
})
