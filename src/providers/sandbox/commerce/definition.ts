/**
 * The simulated commerce platform as a sandbox kind (the world is commerce/world.ts; the API is
 * docs/sandbox-providers.md "commerce"). A consent is for the one shop its `shop` names.
 */
import { parseShop } from "../../commerce/shop.ts"
import { defineSandbox, invalid, notFound, ok } from "../kind.ts"
import { applied, filter, pageQuery, pushAll, reply } from "../world-reply.ts"
import { WorldRefusal } from "../world-kit.ts"
import { CommerceWorld } from "./world.ts"

export const commerceSandbox = defineSandbox<CommerceWorld>({
  provider: "commerce",
  seed: () => new CommerceWorld(),
  accounts: (world) =>
    world.state().shops.map((shop) => ({ id: shop.id, name: shop.name, currency: shop.currency, timezone: shop.timezone })),
  grantAccounts: (world, _persona, authorize) => {
    const shop = parseShop(authorize.get("shop") ?? "")
    return shop === null
      ? invalid("shop must be the shop's handle, its store domain or its admin address")
      : [world.openShop(shop).id]
  },
  readScopes: ["read_products", "read_orders", "read_inventory"],
  writeScope: "write_orders",
  routes: [
    {
      method: "GET",
      path: "/v1/accounts/:shop",
      handler: (world, ctx) => {
        const shop = world.shop(ctx.params["shop"]!)
        return shop && ctx.reaches(shop.id) ? ok(shop) : notFound(`shop ${ctx.params["shop"]}`)
      }
    },
    {
      method: "GET",
      path: "/v1/accounts/:shop/products",
      handler: (world, ctx) =>
        ctx.reaches(ctx.params["shop"]!)
          ? reply(world.listProducts(ctx.params["shop"]!, pageQuery(ctx.query)))
          : notFound(`shop ${ctx.params["shop"]}`)
    },
    {
      method: "GET",
      path: "/v1/accounts/:shop/products/:product/stock",
      handler: (world, ctx) =>
        ctx.reaches(ctx.params["shop"]!)
          ? reply(world.productStock(ctx.params["shop"]!, ctx.params["product"]!))
          : notFound(`shop ${ctx.params["shop"]}`)
    },
    {
      method: "GET",
      path: "/v1/accounts/:shop/orders",
      handler: (world, ctx) =>
        ctx.reaches(ctx.params["shop"]!)
          ? reply(world.listOrders(ctx.params["shop"]!, { ...pageQuery(ctx.query), ...filter(ctx.query, "updated_since") }))
          : notFound(`shop ${ctx.params["shop"]}`)
    },
    {
      method: "GET",
      path: "/v1/accounts/:shop/orders/:order",
      handler: (world, ctx) =>
        ctx.reaches(ctx.params["shop"]!)
          ? reply(world.getOrder(ctx.params["shop"]!, ctx.params["order"]!))
          : notFound(`shop ${ctx.params["shop"]}`)
    }
  ],
  state: (world) => world.state(),
  patch: (world, object, ctx) => applied(ctx, world.patchObjects([object])),
  arrive: (world, arrival, ctx) => {
    const arrived = world.arrive(arrival)
    if (arrived instanceof WorldRefusal) return reply(arrived)
    pushAll(ctx, arrived.pushes)
    return ok({ arrived: true })
  },
  grantDeath: (accountId, _userId, nowSeconds) => ({
    id: `evt_grant_${accountId}_${nowSeconds}`,
    type: "app/uninstalled",
    account_id: accountId,
    created_at: new Date(nowSeconds * 1000).toISOString(),
    data: { object: { id: accountId } }
  })
})
