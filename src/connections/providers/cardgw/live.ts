/** `CardGateway` over HTTP (docs/sandbox-providers.md, "cardgw"), through the shared provider client. */
import { Effect, Layer } from "effect"
import { ProviderHttp } from "../http.ts"
import { apiPath, sessionCall, sessionPages } from "../session-http.ts"
import { CardGateway, Payment } from "./port.ts"

export const CardGatewayAdapter = Layer.effect(CardGateway)(Effect.gen(function*() {
  const http = yield* ProviderHttp
  return {
    payments: (session, options) =>
      sessionPages(http, session, "payments", Payment, apiPath("accounts", session.accountId, "payments"), {
        created_since: options?.createdSince?.toISOString()
      }),
    getPayment: (session, id) =>
      sessionCall(http, session, "getPayment", Payment, {
        method: "GET",
        path: apiPath("accounts", session.accountId, "payments", id)
      })
  }
}))
