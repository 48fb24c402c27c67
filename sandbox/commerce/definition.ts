/**
 * The simulated commerce platform as a sandbox kind (the world is commerce/world.ts; the API is
 * docs/sandbox-providers.md "commerce"). A consent is for the one shop its `shop` names.
 */
import { parseShop } from "../../src/connections/providers/commerce/shop.ts"
import { type ApiContext, defineSandbox, invalid, notFound, ok, refuse, type SandboxReply } from "../kind.ts"
import { applied, arrived, filter, pageQuery, reply } from "../world-reply.ts"
import { CommerceWorld } from "./world.ts"

/**
 * The shop a call names when the grant reaches it and the app is installed there; else the
 * reply: 404 for a shop out of reach, 401 `invalid_token` once the merchant uninstalled the app
 * (as the real platform kills the app's tokens), until a consent installs it again.
 */
const shopOf = (world: CommerceWorld, ctx: ApiContext): string | SandboxReply => {
  const id = ctx.params["shop"] ?? ""
  const shop = world.shop(id)
  if (shop === undefined || !ctx.reaches(id)) return notFound(`shop ${id}`)
  return shop.installed ? id : refuse(401, "invalid_token", "The app is not installed on this shop.")
}

const onShop = (run: (world: CommerceWorld, shopId: string, ctx: ApiContext) => SandboxReply) =>
(world: CommerceWorld, ctx: ApiContext): SandboxReply => {
  const shop = shopOf(world, ctx)
  return typeof shop === "string" ? run(world, shop, ctx) : shop
}

export const commerceSandbox = defineSandbox<CommerceWorld>({
  provider: "commerce",
  seed: () => new CommerceWorld(),
  accounts: (world) =>
    world.allShops().map((shop) => ({ id: shop.id, name: shop.name, currency: shop.currency, timezone: shop.timezone })),
  grantAccounts: (world, _persona, authorize) => {
    const shop = parseShop(authorize.get("shop") ?? "")
    return shop === null
      ? invalid("shop must be the shop's handle, its store domain or its admin address")
      : [world.openShop(shop).id]
  },
  readScopes: ["read_products", "read_orders", "read_inventory"],
  writeScope: "write_orders",
  routes: [
    { method: "GET", path: "/v1/accounts/:shop", handler: onShop((world, shop) => ok(world.shop(shop))) },
    {
      method: "GET",
      path: "/v1/accounts/:shop/products",
      handler: onShop((world, shop, ctx) => reply(world.listProducts(shop, pageQuery(ctx.query))))
    },
    {
      method: "GET",
      path: "/v1/accounts/:shop/products/:product/stock",
      handler: onShop((world, shop, ctx) => reply(world.productStock(shop, ctx.params["product"] ?? "")))
    },
    {
      method: "GET",
      path: "/v1/accounts/:shop/orders",
      handler: onShop((world, shop, ctx) =>
        reply(world.listOrders(shop, { ...pageQuery(ctx.query), ...filter(ctx.query, "updated_since") }))
      )
    },
    {
      method: "GET",
      path: "/v1/accounts/:shop/orders/:order",
      handler: onShop((world, shop, ctx) => reply(world.getOrder(shop, ctx.params["order"] ?? "")))
    }
  ],
  state: (world) => world.state(),
  patch: (world, object, ctx) => applied(ctx, world.patchObjects([object])),
  arrive: (world, arrival, ctx) => arrived(ctx, world.arrive(arrival)),
  grantDeath: (accountId, _userId, nowSeconds) => ({
    id: `evt_grant_${accountId}_${nowSeconds}`,
    type: "app/uninstalled",
    account_id: accountId,
    created_at: new Date(nowSeconds * 1000).toISOString(),
    data: { object: { id: accountId } }
  })
})
