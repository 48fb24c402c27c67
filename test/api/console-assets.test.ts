import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { request } from "node:http"
import { gunzipSync } from "node:zlib"
import { call, serveApp, TestServer, testSettings } from "../support/app.ts"

/** A GET whose body comes back as sent (fetch would undo the gzip). */
const raw = (path: string, headers: Record<string, string> = {}) =>
  Effect.flatMap(TestServer, ({ url }) =>
    Effect.callback<{ status: number; headers: Record<string, string | Array<string> | undefined>; body: Buffer }>((resume) => {
      const req = request(`${url}${path}`, { headers }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) })))
      })
      req.on("error", (error) => resume(Effect.die(error)))
      req.end()
    }))

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("console assets", (it) => {
  it.effect("the shell names a content-addressed script, served gzipped to a client that accepts it and plain otherwise, cached for good", () =>
    Effect.gen(function*() {
      const shell = yield* call("/")
      assert.strictEqual(shell.status, 200)
      const script = /<script[^>]+src="(\/console\/assets\/[0-9a-f]{16}\/console\.js)"/.exec(shell.text)?.[1]
      assert.isDefined(script, shell.text)
      if (script === undefined) return
      const plain = yield* raw(script)
      assert.strictEqual(plain.status, 200)
      assert.isUndefined(plain.headers["content-encoding"])
      assert.strictEqual(plain.headers["cache-control"], "public, max-age=31536000, immutable")
      assert.strictEqual(plain.headers["vary"], "accept-encoding")
      const zipped = yield* raw(script, { "accept-encoding": "gzip, deflate, br" })
      assert.strictEqual(zipped.status, 200)
      assert.strictEqual(zipped.headers["content-encoding"], "gzip")
      assert.strictEqual(zipped.headers["vary"], "accept-encoding")
      assert.isTrue(gunzipSync(zipped.body).equals(plain.body))
      assert.isBelow(zipped.body.length, plain.body.length / 2)
      // Another build's address answers the current bytes, not to be cached.
      const stale = yield* raw(script.replace(/[0-9a-f]{16}/, "0000000000000000"))
      assert.strictEqual(stale.status, 200)
      assert.strictEqual(stale.headers["cache-control"], "no-cache")
      assert.isTrue(stale.body.equals(plain.body))
    }))
})
