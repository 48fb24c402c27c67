/**
 * PROVISIONAL (helper C): the interface of helper B's ConnectionSessions, so the sync worker
 * compiles before B's branch lands; B's file replaces this one at merge.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import type { ProviderError } from "../providers/errors.ts"
import type { ProviderSession } from "../providers/oauth/port.ts"

export class ConnectionSessions extends Context.Service<ConnectionSessions, {
  readonly session: (connectionId: string) => Effect.Effect<ProviderSession, ProviderError | DatabaseUnavailable>
  readonly reportAuthRevoked: (connectionId: string) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/ConnectionSessions") {}
