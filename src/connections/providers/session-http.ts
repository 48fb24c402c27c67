/**
 * Calls on a connection's grant through the shared provider client, their answers decoded: what
 * the messaging, email and calendar ports share. A shape the service cannot read is the provider
 * failing (ProviderUnavailable), never a defect.
 */
import { Effect, type Schema, Stream } from "effect"
import type { ProviderError } from "./errors.ts"
import type { ProviderHttp } from "./http.ts"
import { decodeAnswer } from "./oauth/live.ts"
import type { ProviderSession } from "./oauth/port.ts"

type Http = typeof ProviderHttp.Service
type Decodable = Schema.Top & { readonly DecodingServices: never }
type Query = Readonly<Record<string, string | number | undefined>>

/** `/v1/<segment>/...`, each segment escaped. */
export const apiPath = (...segments: ReadonlyArray<string>) => `/v1/${segments.map(encodeURIComponent).join("/")}`

/** One call; `idempotent: false` for calls that create something (not retried after a timeout). */
export const sessionCall = <S extends Decodable>(
  http: Http,
  session: ProviderSession,
  operation: string,
  schema: S,
  request: {
    readonly method: "GET" | "POST" | "PATCH" | "DELETE"
    readonly path: string
    readonly json?: unknown
    readonly query?: Query
    readonly idempotent?: boolean
  }
): Effect.Effect<S["Type"], ProviderError> => {
  const facts = { provider: session.provider, operation: `${session.provider}.${operation}` }
  return http.call({
    ...facts,
    connectionId: session.connectionId,
    accessToken: session.accessToken,
    method: request.method,
    path: request.path,
    json: request.json,
    query: request.query,
    idempotent: request.idempotent
  }).pipe(Effect.flatMap(decodeAnswer(schema, facts)))
}

/** Every item of a paged list, one page fetched and decoded as the stream is pulled. */
export const sessionPages = <S extends Decodable>(
  http: Http,
  session: ProviderSession,
  operation: string,
  schema: S,
  listPath: string,
  query?: Query
): Stream.Stream<S["Type"], ProviderError> => {
  const facts = { provider: session.provider, operation: `${session.provider}.${operation}` }
  return http.pages({
    ...facts,
    connectionId: session.connectionId,
    accessToken: session.accessToken,
    method: "GET",
    path: listPath,
    query
  }).pipe(Stream.mapEffect(decodeAnswer(schema, facts)))
}
