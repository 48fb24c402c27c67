/**
 * The client rules of the agent OAuth surface (decision 0023), without I/O: RFC 7591 metadata
 * validation for registration, the redirect URI rules (https, or http on a loopback host,
 * RFC 8252), request-time redirect URI matching, and MCP grant lists.
 */
import { Effect } from "effect"
import { McpRegistrationError } from "../../../schema/mcp-oauth.ts"
import { type McpGrant, McpGrants } from "../../../schema/scopes.ts"

export const isMcpGrant = (value: string): value is McpGrant => (McpGrants as ReadonlyArray<string>).includes(value)

export const MAX_REDIRECT_URIS = 10
export const MAX_URI_LENGTH = 2000
export const MAX_CLIENT_NAME = 100
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"])

const registrationError = (error: "invalid_redirect_uri" | "invalid_client_metadata", description: string) =>
  new McpRegistrationError({ error, error_description: description })

/** The redirect URI rules of registration: https, or http on a loopback host (RFC 8252 section 7.3). */
export const redirectUriProblem = (value: unknown): string | undefined => {
  if (typeof value !== "string" || value === "") return "Each redirect URI must be a non-empty string."
  if (value.length > MAX_URI_LENGTH) return `A redirect URI may have at most ${MAX_URI_LENGTH} characters.`
  if (!URL.canParse(value)) return "A redirect URI is not an absolute URI."
  const url = new URL(value)
  if (value.includes("#")) return "A redirect URI must not contain a fragment."
  if (url.username !== "" || url.password !== "") return "A redirect URI must not carry user information."
  if (url.protocol === "https:") return url.hostname === "" ? "A redirect URI needs a host." : undefined
  if (url.protocol === "http:") {
    return LOOPBACK_HOSTS.has(url.hostname)
      ? undefined
      : "An http redirect URI must use a loopback host (127.0.0.1, [::1] or localhost); use https otherwise."
  }
  return "A redirect URI must use https, or http on a loopback host."
}

/**
 * Whether a request's redirect_uri is registered: exactly, or for an http loopback URI with any
 * port (RFC 8252 section 7.3: a native app picks its port when it asks).
 */
export const redirectUriRegistered = (registeredUris: ReadonlyArray<string>, requested: string): boolean => {
  if (registeredUris.includes(requested)) return true
  if (!URL.canParse(requested) || requested.includes("#")) return false
  const asked = new URL(requested)
  if (asked.protocol !== "http:" || !LOOPBACK_HOSTS.has(asked.hostname)) return false
  return registeredUris.some((registered) => {
    const url = new URL(registered)
    return url.protocol === "http:" && url.hostname === asked.hostname && url.pathname === asked.pathname &&
      url.search === asked.search && asked.username === "" && asked.password === ""
  })
}

/** Space-separated MCP grants, repeats ignored; undefined when one is unknown or none is named. */
export const parseGrants = (scope: string): ReadonlyArray<McpGrant> | undefined => {
  const tokens = [...new Set(scope.split(" ").filter((token) => token !== ""))]
  if (tokens.length === 0 || !tokens.every(isMcpGrant)) return undefined
  return tokens
}

/** What a valid registration stores. */
export interface ClientMetadata {
  readonly clientName: string | null
  readonly redirectUris: ReadonlyArray<string>
  readonly grants: ReadonlyArray<McpGrant>
}

/**
 * RFC 7591 client metadata, checked: public clients only, redirect URIs by the rules above,
 * `authorization_code` (with `refresh_token` accepted and dropped), `response_types` `code`,
 * MCP grants as `scope`. Unknown members are ignored and `null` counts as absent (section 2).
 */
export const validateClientMetadata = Effect.fnUntraced(function*(
  body: unknown
): Effect.fn.Return<ClientMetadata, McpRegistrationError> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return yield* registrationError("invalid_client_metadata", "The body must be a JSON object of client metadata.")
  }
  const metadata = new Map(Object.entries(body).filter(([, value]) => value !== null))
  const uris = metadata.get("redirect_uris")
  if (!Array.isArray(uris) || uris.length === 0) {
    return yield* registrationError("invalid_redirect_uri", "redirect_uris must be a non-empty array of URIs.")
  }
  if (uris.length > MAX_REDIRECT_URIS) {
    return yield* registrationError("invalid_redirect_uri", `At most ${MAX_REDIRECT_URIS} redirect URIs may be registered.`)
  }
  for (const uri of uris) {
    const problem = redirectUriProblem(uri)
    if (problem !== undefined) return yield* registrationError("invalid_redirect_uri", problem)
  }
  const redirectUris = [...new Set(uris.map(String))]

  const name = metadata.get("client_name")
  if (
    name !== undefined &&
    (typeof name !== "string" || name.trim() === "" || name.length > MAX_CLIENT_NAME || /\p{Cc}/u.test(name))
  ) {
    return yield* registrationError(
      "invalid_client_metadata",
      `client_name must be a string of 1 to ${MAX_CLIENT_NAME} printable characters.`
    )
  }
  const authMethod = metadata.get("token_endpoint_auth_method")
  if (authMethod !== undefined && authMethod !== "none") {
    return yield* registrationError(
      "invalid_client_metadata",
      "Only public clients are registered: token_endpoint_auth_method must be none (use PKCE)."
    )
  }
  const grantTypes = metadata.get("grant_types")
  if (grantTypes !== undefined) {
    const valid = Array.isArray(grantTypes) && grantTypes.includes("authorization_code") &&
      grantTypes.every((grant) => grant === "authorization_code" || grant === "refresh_token")
    if (!valid) {
      return yield* registrationError(
        "invalid_client_metadata",
        "grant_types must include authorization_code; only authorization_code is served."
      )
    }
  }
  const responseTypes = metadata.get("response_types")
  if (
    responseTypes !== undefined &&
    (!Array.isArray(responseTypes) || responseTypes.length === 0 || !responseTypes.every((type) => type === "code"))
  ) {
    return yield* registrationError("invalid_client_metadata", "response_types must be [\"code\"].")
  }
  const scope = metadata.get("scope")
  const grants = scope === undefined ? McpGrants : typeof scope === "string" ? parseGrants(scope) : undefined
  if (grants === undefined) {
    return yield* registrationError(
      "invalid_client_metadata",
      `scope must be space-separated MCP grants: ${McpGrants.join(", ")}.`
    )
  }
  return { clientName: typeof name === "string" ? name.trim() : null, redirectUris, grants }
})
