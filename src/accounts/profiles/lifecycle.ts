/**
 * What a profile's lifecycle asks of the contexts above accounts, as ports they implement and
 * src/main/ provides (imports go down the layers; these calls go up): the tracking key a new
 * profile is handed (the web tracker's, in ingestion) and the data an archived profile leaves in
 * connections, syncs and webhook subscriptions.
 */
import { Context, type Effect } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"

export class TrackingKeys extends Context.Service<TrackingKeys, {
  /** The profile's live tracking key (its plaintext), minted if it has none; in the caller's transaction. */
  readonly ensure: (profileId: string) => Effect.Effect<string, DatabaseUnavailable>
}>()("svc/TrackingKeys") {}

export interface ArchivedProfile {
  readonly profileId: string
  readonly workspaceId: string
}

export class ProfileLifecycle extends Context.Service<ProfileLifecycle, {
  /**
   * The profile (and its workspace) was archived, in the caller's transaction: the layers above
   * pause or delete what they hold of it (non-audit data goes; the audit trail stays).
   */
  readonly archived: (profile: ArchivedProfile) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/ProfileLifecycle") {}
