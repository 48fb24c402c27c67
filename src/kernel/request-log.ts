/**
 * The request log's port (decision 0130): the envelope middleware (src/http/) hands each
 * profile-grain `/api/v1` request to a sink; src/ops/request-logs/ implements it (buffered,
 * written in batches) and src/main/ wires it. Without a sink nothing is recorded.
 */
import { Context } from "effect"

/** One request as the log keeps it: never a body, a query string, a header or a secret. */
export interface RequestLogEntry {
  readonly profileId: string
  readonly requestId: string
  readonly method: string
  /** The URL's path without its query string, at most `MAX_LOGGED_PATH` characters. */
  readonly path: string
  /** The matched route's template (`/api/v1/webhooks/deliveries/:id/attempts`); null when none matched. */
  readonly route: string | null
  readonly status: number
  readonly durationMs: number
  readonly principalKind: string
  /** The API key's id (never its secret) when an API key made the call. */
  readonly keyId: string | null
  /** When the request started (ms since the epoch). */
  readonly startedAt: number
}

export const MAX_LOGGED_PATH = 512

/**
 * Takes an entry without waiting and without failing: the request path never pays for the log's
 * write (it is buffered), and a log that cannot keep up drops entries rather than slow requests.
 */
export class RequestLogSink extends Context.Service<RequestLogSink, {
  readonly offer: (entry: RequestLogEntry) => void
}>()("svc/RequestLogSink") {}
