/**
 * For the sandbox kinds' tests: a grant on a sandbox provider as a connection would hold it
 * (consent driven like a person, code exchanged, accounts read), and a local callback receiver
 * the sandbox pushes to, which keeps each raw body and its headers so a test can check the
 * signature the way `/hooks/{provider}` does.
 */
import { Effect } from "effect"
import { createServer, type IncomingHttpHeaders } from "node:http"
import { ProviderOAuth, type ProviderSession } from "../../src/providers/oauth/port.ts"
import type { ProviderKind } from "../../src/providers/registry.ts"
import { driveConsent, redirectParams } from "./providers.ts"

const REDIRECT = "https://app.example/callback"

export const connectSandbox = (provider: ProviderKind, persona: string = "one_account", accountIndex = 0) =>
  Effect.gen(function*() {
    const oauth = yield* ProviderOAuth
    const startUrl = yield* oauth.authorizeUrl(provider, { redirectUri: REDIRECT, state: "st" })
    const consent = yield* driveConsent(startUrl, { persona, decision: "approve" })
    const code = redirectParams(consent.location).code ?? ""
    const tokens = yield* oauth.exchangeCode(provider, { code, redirectUri: REDIRECT })
    const me = yield* oauth.identify(provider, tokens.accessToken)
    const session: ProviderSession = {
      provider,
      connectionId: `conn-${provider}-${persona}-${accountIndex}`,
      accountId: me.accounts[accountIndex]?.id ?? "",
      accessToken: tokens.accessToken
    }
    return { session, me, tokens }
  })

export interface Received {
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: string
}

const flatHeaders = (headers: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(", ") : value]))

/** An HTTP receiver on 127.0.0.1:0 for the scope's life, answering 200 to every push. */
export const callbackReceiver = Effect.acquireRelease(
  Effect.callback<{ readonly url: string; readonly received: Array<Received>; readonly close: () => void }>((resume) => {
    const received: Array<Received> = []
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        received.push({ headers: flatHeaders(request.headers), body: Buffer.concat(chunks).toString("utf8") })
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}/hooks`, received, close: () => server.close() }))
    })
  }),
  (receiver) => Effect.sync(() => receiver.close())
)
