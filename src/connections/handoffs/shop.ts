/**
 * A commerce hand-off's `shop`, in one of the three accepted forms (decision 0057): the store's
 * handle (`acme-store`), `<handle>.<store-domain>` (`acme-store.mystore.shop`) or its admin URL
 * (`https://admin.mystore.shop/store/acme-store`). Answers the handle, or null for anything else.
 */
export const STORE_DOMAIN = "mystore.shop"
export const STORE_ADMIN_HOST = `admin.${STORE_DOMAIN}`

const HANDLE = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/

export const shopHandle = (input: string): string | null => {
  const value = input.trim().toLowerCase()
  if (HANDLE.test(value)) return value
  if (value.endsWith(`.${STORE_DOMAIN}`) && !value.includes("/")) {
    const handle = value.slice(0, -(STORE_DOMAIN.length + 1))
    return HANDLE.test(handle) ? handle : null
  }
  if (!URL.canParse(value)) return null
  const url = new URL(value)
  if (url.protocol !== "https:" || url.host !== STORE_ADMIN_HOST) return null
  const match = /^\/store\/([^/]+)\/?/.exec(url.pathname)
  return match?.[1] !== undefined && HANDLE.test(match[1]) ? match[1] : null
}
