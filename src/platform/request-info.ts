/** Small readings of a request shared by handlers that parse their own bodies or meter by address. */
import { Option } from "effect"
import type { HttpServerRequest } from "effect/http"

/** The media type of a `Content-Type` value, lower-cased, without parameters; "" when absent. */
export const mediaTypeOf = (contentType: string | undefined): string =>
  (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? ""

/** The peer address without the IPv4-mapped IPv6 prefix (`::ffff:127.0.0.1` is `127.0.0.1`). */
export const peerAddressOf = (request: HttpServerRequest.HttpServerRequest): Option.Option<string> =>
  Option.map(request.remoteAddress, (address) => address.replace(/^::ffff:/i, ""))
