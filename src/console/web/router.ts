/** Addresses in the browser: the console's pages are history entries of one document. */
import { useEffect, useState } from "preact/hooks"

const listeners = new Set<() => void>()

export const navigate = (to: string, options: { readonly replace?: boolean } = {}): void => {
  if (options.replace === true) window.history.replaceState(null, "", to)
  else window.history.pushState(null, "", to)
  for (const listener of listeners) listener()
}

window.addEventListener("popstate", () => {
  for (const listener of listeners) listener()
})

export interface Location {
  readonly path: string
  readonly query: URLSearchParams
}

const current = (): Location => ({ path: window.location.pathname, query: new URLSearchParams(window.location.search) })

export const useLocation = (): Location => {
  const [location, setLocation] = useState(current)
  useEffect(() => {
    const listener = () => setLocation(current())
    listeners.add(listener)
    return () => {
      listeners.delete(listener)
    }
  }, [])
  return location
}

/** A link that changes the address without reloading; a modified click opens it as the browser would. */
export const onLinkClick = (event: MouseEvent, to: string): void => {
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
  event.preventDefault()
  navigate(to)
}
