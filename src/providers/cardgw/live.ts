/** `CardGateway` over HTTP (docs/sandbox-providers.md, "cardgw"), through the shared provider client. */
import { Effect, Layer, Stream } from "effect"
import { ProviderHttp } from "../http.ts"
import type { ProviderSession } from "../oauth/port.ts"
import { decodeAnswer } from "../oauth/live.ts"
import { CardGateway, Payment } from "./port.ts"

const account = (session: ProviderSession) => `/v1/accounts/${encodeURIComponent(session.accountId)}`

export const CardGatewayLive = Layer.effect(CardGateway)(Effect.gen(function*() {
  const http = yield* ProviderHttp
  const facts = (operation: string) => ({ provider: "cardgw" as const, operation: `cardgw.${operation}` })
  const request = (session: ProviderSession, operation: string) => ({
    ...facts(operation),
    connectionId: session.connectionId,
    accessToken: session.accessToken
  })

  return {
    payments: (session, options) =>
      http.pages({
        ...request(session, "payments"),
        method: "GET",
        path: `${account(session)}/payments`,
        query: { created_since: options?.createdSince?.toISOString() }
      }).pipe(Stream.mapEffect(decodeAnswer(Payment, facts("payments")))),
    getPayment: (session, id) =>
      http.call({ ...request(session, "getPayment"), method: "GET", path: `${account(session)}/payments/${encodeURIComponent(id)}` })
        .pipe(Effect.flatMap(decodeAnswer(Payment, facts("getPayment"))))
  }
}))
