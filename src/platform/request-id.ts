import { Context } from "effect"

/**
 * The id of the request being served (empty outside a request): the `request_id` of its
 * error envelope, its `X-Request-Id`, and a field of every log line written while serving it.
 */
export const CurrentRequestId = Context.Reference<string>("svc/CurrentRequestId", { defaultValue: () => "" })
