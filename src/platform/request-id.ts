import { Context } from "effect"

/**
 * The id of the request being served (empty outside a request): the `request_id` of its
 * error envelope, its `X-Request-Id`, and a field of every log line written while serving it.
 */
export const CurrentRequestId = Context.Reference<string>("svc/CurrentRequestId", { defaultValue: () => "" })

/** A new request id, for a request that brought no usable `X-Request-Id`. */
export const newRequestId = (): string => `req_${crypto.randomUUID().replaceAll("-", "")}`

/** Who a request was served for, as its access log line reports it (decision 0051). */
export interface RequestAccess {
  principalKind: string | null
  profileId: string | null
  /** The API key's id when an API key made the call (the request log names it, decision 0130). */
  keyId: string | null
}

/**
 * The serving request's access record (undefined outside a request): the envelope middleware
 * provides a fresh one, the auth middleware fills it once it accepts a credential.
 */
export const CurrentRequestAccess = Context.Reference<RequestAccess | undefined>("svc/CurrentRequestAccess", {
  defaultValue: () => undefined
})
