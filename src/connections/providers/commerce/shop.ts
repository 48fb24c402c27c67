/**
 * The three forms a merchant may give their store in (`shop` on a commerce hand-off): the
 * handle (`acme`), the store domain (`acme.store.commerce.test`) or an admin address
 * (`https://admin.commerce.test/store/acme` or `https://acme.store.commerce.test/admin`).
 * All name the same shop: its handle, which is also the shop's account id at the provider.
 */

/** The commerce platform's store domain (the neutral word for the real platform's). */
export const COMMERCE_STORE_DOMAIN = "store.commerce.test"
/** The host of the platform's admin, whose `/store/<handle>` addresses a shop. */
export const COMMERCE_ADMIN_HOST = "admin.commerce.test"

const HANDLE = /^[a-z0-9][a-z0-9-]{0,58}[a-z0-9]$|^[a-z0-9]$/

/** The shop's handle, or null when `input` is in none of the three forms. */
export const parseShop = (input: string): string | null => {
  const text = input.trim().toLowerCase()
  if (text.length === 0 || text.length > 255) return null
  if (HANDLE.test(text)) return text
  const domainHandle = (host: string) => {
    const suffix = `.${COMMERCE_STORE_DOMAIN}`
    if (!host.endsWith(suffix)) return null
    const handle = host.slice(0, -suffix.length)
    return HANDLE.test(handle) ? handle : null
  }
  if (!text.includes("/")) return domainHandle(text)
  if (!URL.canParse(text)) return null
  const url = new URL(text)
  if (url.protocol !== "https:" && url.protocol !== "http:") return null
  if (url.hostname === COMMERCE_ADMIN_HOST) {
    const match = /^\/store\/([^/]+)\/?/.exec(url.pathname)
    return match && HANDLE.test(match[1]!) ? match[1]! : null
  }
  return url.pathname === "/admin" || url.pathname.startsWith("/admin/") ? domainHandle(url.hostname) : null
}

export const shopDomain = (handle: string) => `${handle}.${COMMERCE_STORE_DOMAIN}`
