/** `Crm` over HTTP (docs/sandbox-providers.md, "crm"), through the shared provider client. */
import { Effect, Layer } from "effect"
import { ProviderHttp } from "../http.ts"
import { apiPath, sessionCall, sessionPages } from "../session-http.ts"
import { Crm, CrmDeal, CrmPipeline } from "./port.ts"

export const CrmAdapter = Layer.effect(Crm)(Effect.gen(function*() {
  const http = yield* ProviderHttp
  return {
    pipelines: (session) =>
      sessionPages(http, session, "pipelines", CrmPipeline, apiPath("accounts", session.accountId, "pipelines")),
    deals: (session, options) =>
      sessionPages(http, session, "deals", CrmDeal, apiPath("accounts", session.accountId, "deals"), {
        updated_since: options?.updatedSince?.toISOString()
      }),
    getDeal: (session, id) =>
      sessionCall(http, session, "getDeal", CrmDeal, { method: "GET", path: apiPath("accounts", session.accountId, "deals", id) }),
    moveDeal: (session, id, stageId) =>
      sessionCall(http, session, "moveDeal", CrmDeal, {
        method: "PATCH",
        path: apiPath("accounts", session.accountId, "deals", id),
        json: { stage_id: stageId }
      })
  }
}))
