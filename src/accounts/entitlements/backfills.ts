/**
 * The history an attribution entitlement switched on asks the ad platforms for: provider syncs
 * are ingestion's (above accounts), so this is a port src/main/ provides from it.
 */
import { Context, type Effect } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"

export class AttributionBackfills extends Context.Service<AttributionBackfills, {
  /** Queues a backfill of `windowDays` for each of the profile's connections, in the caller's transaction; answers how many. */
  readonly enqueue: (profileId: string, windowDays: number, reason: string) => Effect.Effect<number, DatabaseUnavailable>
}>()("svc/AttributionBackfills") {}
