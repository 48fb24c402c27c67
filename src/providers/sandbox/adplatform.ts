/** The simulated ad platform (skeleton: accounts and scopes; the world follows). */
import { defineSandbox, invalid, notFound } from "./kind.ts"

interface Account {
  readonly id: string
  readonly name: string
  readonly currency: string
  readonly timezone: string
}

export const adplatformSandbox = defineSandbox({
  provider: "adplatform",
  seed: () => ({
    accounts: [
      { id: "act_1001", name: "Sandbox Ads USD", currency: "USD", timezone: "America/New_York" },
      { id: "act_1002", name: "Sandbox Ads EUR", currency: "EUR", timezone: "Europe/Berlin" }
    ] satisfies Array<Account>
  }),
  accounts: (world) => world.accounts,
  readScopes: ["ads_read", "business_management"],
  writeScope: "ads_management",
  routes: [],
  state: (world) => ({ accounts: world.accounts, received_events: [] }),
  patch: (world, object) => world.accounts.some((account) => account.id === object.id) ? undefined : notFound(object.id),
  arrive: (_world, arrival) => invalid(`unknown arrival kind ${String(arrival["kind"])}`),
  grantDeath: (accountId, userId, nowSeconds) => ({
    object: "permissions",
    entry: [{ id: accountId, time: nowSeconds, changes: [{ field: "deauthorize", value: { user_id: userId } }] }]
  })
})
