/**
 * The console for people (issue 33, decision 0123): `/` (sign-in for a signed-out person),
 * `/console` and every address under it answer the shell page; `/console/assets/...` the
 * bundle. The console is a client of /api/v1 like any other: these routes serve files only.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { consoleBundle } from "./build.ts"
import { consoleHeaders, shellPage } from "./pages.ts"

const shell = Effect.map(consoleBundle, (bundle) =>
  HttpServerResponse.html(shellPage(bundle)).pipe(HttpServerResponse.setHeaders(consoleHeaders)))

const assetRoute = (name: "script" | "style") =>
  HttpRouter.add(
    "GET",
    `/console/assets/:hash/${name === "script" ? "console.js" : "console.css"}`,
    Effect.gen(function*() {
      const bundle = yield* consoleBundle
      const params = yield* HttpRouter.params
      const asset = bundle[name]
      // Only the current build's hash is served for good; an older one gets the current bytes, not cached.
      const current = asset.path.split("/")[3] === params["hash"]
      const request = yield* HttpServerRequest.HttpServerRequest
      const gzip = /\bgzip\b/.test(request.headers["accept-encoding"] ?? "")
      return HttpServerResponse.uint8Array(gzip ? asset.gzipped : asset.bytes, {
        contentType: asset.contentType,
        headers: {
          "cache-control": current ? "public, max-age=31536000, immutable" : "no-cache",
          "x-content-type-options": "nosniff",
          vary: "accept-encoding",
          ...(gzip ? { "content-encoding": "gzip" } : {})
        }
      })
    })
  )

export const ConsoleRoutes = Layer.mergeAll(
  HttpRouter.add("GET", "/", shell),
  HttpRouter.add("GET", "/console/*", shell),
  assetRoute("script"),
  assetRoute("style")
)
