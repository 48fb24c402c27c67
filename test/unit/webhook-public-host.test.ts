/**
 * The public-host rule (decision 0077): the development allow-list, the refusals at registration, the
 * request going to the checked address without a second look-up and never following a redirect;
 * and Standard Webhooks signatures and the retry ladder (decision 0078). The address classifier
 * itself is tested in test/unit/public-address.test.ts.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Duration, Effect, Exit, Option } from "effect"
import { createHmac } from "node:crypto"
import { createServer } from "node:http"
import { type Destination, sendTo } from "../../src/platform/outbound-http.ts"
import { checkTarget, isAllowed, parseAllowList } from "../../src/platform/public-host.ts"
import { defaultWebhookSettings, nextDelaySeconds, retryAfterSeconds } from "../../src/webhooks/delivery/service.ts"
import { newSecret, signedHeaders } from "../../src/webhooks/delivery/signing.ts"
import { DnsServer, DnsServerLayer } from "../support/dns-server.ts"

const NONE = parseAllowList([])

/** A webhook's POST to an address the rule checked, through the one outbound client; its body dropped. */
const postToChecked = (target: Destination, headers: Record<string, string>, body: string, timeout: Duration.Duration) =>
  sendTo(target, { method: "POST", url: target.url.toString(), headers, body, timeout, keepBody: false })

/** A receiver on 127.0.0.1 answering `status` (and `headers`), recording each request's Host header and path. */
const receiver = (status: number, headers: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.callback<{ port: number; seen: Array<{ host: string | undefined; path: string | undefined }>; close: () => void }>((resume) => {
      const seen: Array<{ host: string | undefined; path: string | undefined }> = []
      const server = createServer((request, response) => {
        seen.push({ host: request.headers.host, path: request.url })
        request.resume()
        request.on("end", () => response.writeHead(status, headers).end())
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resume(Effect.succeed({ port: typeof address === "object" && address !== null ? address.port : 0, seen, close: () => server.close() }))
      })
    }),
    (server) => Effect.sync(() => server.close())
  )

describe("development allow-list", () => {
  it("the allow-list lets named hosts and CIDRs through, nothing else", () => {
    const allow = parseAllowList(["hooks.local", "127.0.0.0/8", "fd00::/8", "not a cidr/99"])
    assert.isTrue(isAllowed(allow, "hooks.local", "10.0.0.1"))
    assert.isTrue(isAllowed(allow, "x", "127.0.0.5"))
    assert.isTrue(isAllowed(allow, "x", "fd00::1"))
    assert.isFalse(isAllowed(allow, "x", "10.0.0.1"))
    assert.isFalse(isAllowed(allow, "x", "fe80::1"))
    assert.isFalse(isAllowed(NONE, "localhost", "127.0.0.1"))
  })
})

describe("checkTarget", () => {
  const refusal = (url: string, allow = NONE) =>
    Effect.map(Effect.exit(checkTarget(url, allow, [])), (exit) =>
      Exit.isFailure(exit) ? Option.getOrUndefined(Option.map(Exit.findErrorOption(exit), (error) => error.reason)) : "accepted")

  it.effect("refuses private, loopback, link-local, CGNAT, ULA and metadata literals, plain http and credentials", () =>
    Effect.gen(function*() {
      for (const url of [
        "https://127.0.0.1/hook",
        "https://10.0.0.8/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://100.64.1.1/",
        "https://[::1]/",
        "https://[fd00::5]/",
        "https://[::ffff:192.168.0.1]/",
        "https://[fe80::1]/"
      ]) assert.strictEqual(yield* refusal(url), "host_not_public", url)
      assert.strictEqual(yield* refusal("http://93.184.216.34/hook"), "url_scheme")
      assert.strictEqual(yield* refusal("ftp://93.184.216.34/"), "url_invalid")
      assert.strictEqual(yield* refusal("https://user:pw@93.184.216.34/"), "url_invalid")
      assert.strictEqual(yield* refusal("not a url"), "url_invalid")
      assert.strictEqual(yield* refusal("https://93.184.216.34/hook"), "accepted")
      // The development allow-list opens loopback, and plain http with it.
      assert.strictEqual(yield* refusal("http://127.0.0.1:9/hook", parseAllowList(["127.0.0.1"])), "accepted")
      // "localhost" resolves to loopback: refused without the allow-list.
      assert.strictEqual(yield* refusal("https://localhost/hook"), "host_not_public")
    }))

  it.effect("the request goes to the checked address (the URL's host is never looked up again) and a redirect is not followed", () =>
    Effect.gen(function*() {
      const redirecting = yield* receiver(302, { location: "http://127.0.0.1:9/elsewhere" })
      // `.invalid` never resolves (RFC 6761): only the pinned address can have been used.
      const url = new URL(`http://hook.invalid:${redirecting.port}/path?q=1`)
      const answer = yield* postToChecked({ url, address: "127.0.0.1" }, { "content-type": "application/json" }, "{}", Duration.seconds(5))
      assert.strictEqual(answer.status, 302)
      assert.deepStrictEqual(redirecting.seen, [{ host: `hook.invalid:${redirecting.port}`, path: "/path?q=1" }])
    }))

  it.effect("a silent endpoint fails within the timeout", () =>
    Effect.gen(function*() {
      const silent = yield* Effect.acquireRelease(
        Effect.callback<{ port: number; close: () => void }>((resume) => {
          const server = createServer(() => {})
          server.listen(0, "127.0.0.1", () => {
            const address = server.address()
            resume(Effect.succeed({ port: typeof address === "object" && address !== null ? address.port : 0, close: () => server.closeAllConnections() }))
          })
        }),
        (server) => Effect.sync(() => server.close())
      )
      const started = Date.now()
      const exit = yield* Effect.exit(postToChecked({ url: new URL(`http://x.invalid:${silent.port}/`), address: "127.0.0.1" }, {}, "{}", Duration.millis(300)))
      assert.isTrue(Exit.isFailure(exit))
      assert.isBelow(Date.now() - started, 3000)
    }))
})

describe("signing and the ladder", () => {
  it("webhook-signature: v1,base64 HMAC-SHA256 over id.timestamp.body with the decoded whsec_ key, one per secret", () => {
    const current = newSecret()
    const previous = newSecret()
    assert.match(current, /^whsec_[A-Za-z0-9+/]+=*$/)
    const headers = signedHeaders([current, previous], "evt_1", 1700000000, "{\"a\":1}")
    const expected = (secret: string) =>
      `v1,${createHmac("sha256", Buffer.from(secret.slice(6), "base64")).update("evt_1.1700000000.{\"a\":1}").digest("base64")}`
    assert.strictEqual(headers["webhook-signature"], `${expected(current)} ${expected(previous)}`)
    assert.strictEqual(headers["webhook-id"], "evt_1")
    assert.strictEqual(headers["webhook-timestamp"], "1700000000")
  })

  it("the ladder: about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 24 h after the event, jittered; Retry-After only later; spent after 8 attempts", () => {
    const ladder = defaultWebhookSettings.ladder
    const at = (attempts: number, age: number, retryAfter?: number, random = 0.5) =>
      Option.getOrUndefined(nextDelaySeconds(ladder, attempts, age, retryAfter, () => random))
    assert.strictEqual(at(1, 0), 5)
    assert.strictEqual(at(2, 5), 295)
    assert.strictEqual(at(7, 36000), 50400)
    assert.isUndefined(at(8, 86400))
    // Jitter stays within a tenth of the step.
    assert.approximately(at(2, 5, undefined, 0) ?? 0, 295 - 29.5, 0.001)
    assert.approximately(at(2, 5, undefined, 1) ?? 0, 295 + 29.5, 0.001)
    // Retry-After later than the ladder wins; sooner does not.
    assert.strictEqual(at(1, 0, 120), 120)
    assert.strictEqual(at(2, 5, 10), 295)
    assert.strictEqual(retryAfterSeconds("30"), 30)
    assert.strictEqual(retryAfterSeconds(new Date(Date.now() + 60_000).toUTCString(), Date.now()) !== undefined, true)
    assert.isUndefined(retryAfterSeconds("soon"))
  })
})

describe("checkTarget over real DNS (test/support/dns-server.ts)", () => {
  layer(DnsServerLayer)((it) => {
    it.effect("names resolving to private, loopback, metadata or ULA addresses are refused; every address must be public", () =>
      Effect.gen(function*() {
        const dns = yield* DnsServer
        const servers = [`127.0.0.1:${dns.port}`]
        dns.set("rebind.test", { a: ["10.0.0.7"] })
        dns.set("loop.test", { a: ["127.0.0.1"] })
        dns.set("meta.test", { a: ["169.254.169.254"] })
        dns.set("ula.test", { aaaa: ["fd00::1"] })
        dns.set("mixed.test", { a: ["93.184.216.34"], aaaa: ["::1"] })
        dns.set("public.test", { a: ["93.184.216.34"] })
        const reason = (url: string, allow = NONE) =>
          Effect.map(Effect.exit(checkTarget(url, allow, servers)), (exit) =>
            Exit.isFailure(exit) ? Option.getOrUndefined(Option.map(Exit.findErrorOption(exit), (error) => error.reason)) : "accepted")
        for (const host of ["rebind.test", "loop.test", "meta.test", "ula.test", "mixed.test"]) {
          assert.strictEqual(yield* reason(`https://${host}/hook`), "host_not_public", host)
        }
        assert.strictEqual(yield* reason("https://nowhere.test/hook"), "host_unresolvable")
        // The checked address is the one the request will use: no second look-up can swap it.
        const checked = yield* checkTarget("https://public.test/hook", NONE, servers)
        assert.strictEqual(checked.address, "93.184.216.34")
        assert.strictEqual(checked.url.hostname, "public.test")
        // The allow-list by name lets a development host through, with plain http.
        assert.strictEqual(yield* reason("http://rebind.test/hook", parseAllowList(["rebind.test"])), "accepted")
        assert.include(dns.questions, "A rebind.test")
      }))
  })
})
