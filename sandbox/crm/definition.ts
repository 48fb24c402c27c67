/** The simulated CRM as a sandbox kind (the world is crm/world.ts; the API is docs/sandbox-providers.md "crm"). */
import { defineSandbox, ok } from "../kind.ts"
import { WorldRefusal } from "../world-kit.ts"
import { applied, arrived, filter, onAccount, pageQuery, pushAll, reply } from "../world-reply.ts"
import { CrmWorld } from "./world.ts"

export const crmSandbox = defineSandbox<CrmWorld>({
  provider: "crm",
  seed: () => new CrmWorld(),
  accounts: (world) => world.accounts,
  readScopes: ["crm.objects.deals.read", "crm.schemas.pipelines.read"],
  writeScope: "crm.objects.deals.write",
  routes: [
    {
      method: "GET",
      path: "/v1/accounts/:account/pipelines",
      handler: onAccount((world, account, ctx) => reply(world.listPipelines(account, pageQuery(ctx.query))))
    },
    {
      method: "GET",
      path: "/v1/accounts/:account/deals",
      handler: onAccount((world, account, ctx) =>
        reply(world.listDeals(account, { ...pageQuery(ctx.query), ...filter(ctx.query, "updated_since") }))
      )
    },
    {
      method: "GET",
      path: "/v1/accounts/:account/deals/:deal",
      handler: onAccount((world, account, ctx) => reply(world.getDeal(account, ctx.params["deal"] ?? "")))
    },
    {
      method: "PATCH",
      path: "/v1/accounts/:account/deals/:deal",
      handler: onAccount((world, account, ctx) => {
        const refused = ctx.requireWrite()
        if (refused) return refused
        const moved = world.updateDeal(account, ctx.params["deal"] ?? "", ctx.body)
        if (moved instanceof WorldRefusal) return reply(moved)
        ctx.countWrite()
        pushAll(ctx, moved.pushes)
        return ok(moved.deal)
      })
    }
  ],
  state: (world) => world.state(),
  patch: (world, object, ctx) => applied(ctx, world.patchObjects([object])),
  arrive: (world, arrival, ctx) => arrived(ctx, world.arrive(arrival)),
  grantDeath: (accountId, userId, nowSeconds) => ({
    id: `evt_grant_${accountId}_${userId}_${nowSeconds}`,
    type: "grant.revoked",
    account_id: accountId,
    created_at: new Date(nowSeconds * 1000).toISOString(),
    data: { object: { user_id: userId } }
  })
})
