/** An OAuth app registered through the operator surface, and calls made with its credential. */
import { Effect } from "effect"
import { call, OPERATOR_TOKEN } from "./app.ts"

export interface PartnerApp {
  readonly id: string
  readonly clientId: string
  readonly clientSecret: string
  readonly basic: string
}

export const registerApp = (name = "Partner") =>
  Effect.gen(function*() {
    const response = yield* call("/api/v1/admin/oauth-apps", {
      method: "POST",
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ name, redirect_uris: ["https://partner.example/callback"] })
    })
    const data = response.json.data
    return {
      id: data.id,
      clientId: data.client_id,
      clientSecret: data.client_secret,
      basic: `Basic ${Buffer.from(`${data.client_id}:${data.client_secret}`).toString("base64")}`
    } satisfies PartnerApp
  })

export const asApp = (app: PartnerApp, path: string, method: string, body?: unknown) =>
  call(path, {
    method,
    headers: { authorization: app.basic, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
