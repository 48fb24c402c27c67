/**
 * The sandbox of a provider kind that has no world of its own yet: two accounts, consent,
 * tokens, `/v1/me` and subscriptions (the core's), no API of its own. A kind with its own file
 * replaces it in registry.ts.
 */
import type { ProviderKind } from "../src/connections/providers/registry.ts"
import { defineSandbox, invalid, notFound } from "./kind.ts"

export const genericSandbox = (provider: ProviderKind) =>
  defineSandbox({
    provider,
    seed: () => ({
      accounts: [
        { id: `${provider}_1001`, name: `Sandbox ${provider} account 1`, currency: "USD", timezone: "UTC" },
        { id: `${provider}_1002`, name: `Sandbox ${provider} account 2`, currency: "EUR", timezone: "Europe/Berlin" }
      ]
    }),
    accounts: (world) => world.accounts,
    readScopes: ["read"],
    writeScope: "write",
    routes: [],
    state: (world) => ({ accounts: world.accounts }),
    patch: (world, object) => world.accounts.some((account) => account.id === object.id) ? undefined : notFound(object.id),
    arrive: (_world, arrival) => invalid(`${provider} has no arrival of kind ${String(arrival["kind"])}`),
    grantDeath: (accountId, userId, nowSeconds) => ({ event: "grant_revoked", account_id: accountId, user_id: userId, time: nowSeconds })
  })
