/** `Crm` over HTTP (docs/sandbox-providers.md, "crm"), through the shared provider client. */
import { Effect, Layer, Schema, Stream } from "effect"
import { ProviderHttp } from "../http.ts"
import type { ProviderSession } from "../oauth/port.ts"
import { decodeAnswer } from "../oauth/live.ts"
import { Crm, CrmDeal, CrmPipeline } from "./port.ts"

const account = (session: ProviderSession) => `/v1/accounts/${encodeURIComponent(session.accountId)}`

export const CrmLive = Layer.effect(Crm)(Effect.gen(function*() {
  const http = yield* ProviderHttp
  const facts = (operation: string) => ({ provider: "crm" as const, operation: `crm.${operation}` })
  const request = (session: ProviderSession, operation: string) => ({
    ...facts(operation),
    connectionId: session.connectionId,
    accessToken: session.accessToken
  })

  const list = <S extends Schema.Top & { readonly DecodingServices: never }>(
    schema: S,
    session: ProviderSession,
    operation: string,
    path: string,
    query: Readonly<Record<string, string | undefined>> = {}
  ) =>
    http.pages({ ...request(session, operation), method: "GET", path, query }).pipe(
      Stream.mapEffect(decodeAnswer(schema, facts(operation)))
    )

  const deal = (body: unknown, operation: string) => decodeAnswer(CrmDeal, facts(operation))(body)

  return {
    pipelines: (session) => list(CrmPipeline, session, "pipelines", `${account(session)}/pipelines`),
    deals: (session, options) =>
      list(CrmDeal, session, "deals", `${account(session)}/deals`, {
        updated_since: options?.updatedSince?.toISOString()
      }),
    getDeal: (session, id) =>
      http.call({ ...request(session, "getDeal"), method: "GET", path: `${account(session)}/deals/${encodeURIComponent(id)}` })
        .pipe(Effect.flatMap((body) => deal(body, "getDeal"))),
    moveDeal: (session, id, stageId) =>
      http.call({
        ...request(session, "moveDeal"),
        method: "PATCH",
        path: `${account(session)}/deals/${encodeURIComponent(id)}`,
        json: { stage_id: stageId }
      }).pipe(Effect.flatMap((body) => deal(body, "moveDeal")))
  }
}))
