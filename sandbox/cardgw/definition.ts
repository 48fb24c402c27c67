/** The simulated card gateway as a sandbox kind (the world is cardgw/world.ts; the API is docs/sandbox-providers.md "cardgw"). */
import { defineSandbox } from "../kind.ts"
import { applied, arrived, filter, onAccount, pageQuery, reply } from "../world-reply.ts"
import { CardgwWorld } from "./world.ts"

export const cardgwSandbox = defineSandbox<CardgwWorld>({
  provider: "cardgw",
  seed: () => new CardgwWorld(),
  accounts: (world) => world.accounts,
  readScopes: ["payments.read"],
  writeScope: "payments.write",
  routes: [
    {
      method: "GET",
      path: "/v1/accounts/:account/payments",
      handler: onAccount((world, account, ctx) =>
        reply(world.listPayments(account, { ...pageQuery(ctx.query), ...filter(ctx.query, "created_since") }))
      )
    },
    {
      method: "GET",
      path: "/v1/accounts/:account/payments/:payment",
      handler: onAccount((world, account, ctx) => reply(world.getPayment(account, ctx.params["payment"] ?? "")))
    }
  ],
  state: (world) => world.state(),
  patch: (world, object, ctx) => applied(ctx, world.patchObjects([object])),
  arrive: (world, arrival, ctx) => arrived(ctx, world.arrive(arrival)),
  grantDeath: (accountId, userId, nowSeconds) => ({
    id: `evt_grant_${accountId}_${userId}_${nowSeconds}`,
    type: "account.application.deauthorized",
    account_id: accountId,
    created_at: new Date(nowSeconds * 1000).toISOString(),
    data: { object: { user_id: userId } }
  })
})
