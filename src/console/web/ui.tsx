/** What every screen shares: the focus on a page's heading, and how a failed call is shown. */
import { useEffect, useRef } from "preact/hooks"
import { ApiError } from "./client.ts"

/** Where a page starts: its heading takes focus, so a screen reader and the keyboard begin there. */
export const useFocusHeading = (key: unknown) => {
  const heading = useRef<HTMLHeadingElement>(null)
  useEffect(() => {
    heading.current?.focus({ preventScroll: true })
  }, [key])
  return heading
}

/** A failed call: what the service said, and the request id to quote to support. */
export const ErrorPanel = ({ error, title }: { readonly error: unknown; readonly title?: string }) => {
  const apiError = error instanceof ApiError ? error : null
  return (
    <div class="error-panel" role="alert">
      <p class="error-title">{title ?? "Something went wrong"}</p>
      <p class="error-message">{apiError?.message ?? (error instanceof Error ? error.message : String(error))}</p>
      {apiError !== null && (
        <p class="error-meta">
          {apiError.code !== "unknown" && <>Code <code>{apiError.code}</code> · </>}
          Request id <code class="request-id">{apiError.requestId ?? "none"}</code>
        </p>
      )}
    </div>
  )
}

