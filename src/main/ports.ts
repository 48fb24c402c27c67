/**
 * The ports a lower context declares and a higher one implements (dependency inversion: imports
 * go down the layers, calls may go up through these). Each is assembled here from the owning
 * context's service, so neither side imports the other.
 */
import { Effect, Layer } from "effect"
import { CommerceAppConnections } from "../accounts/admin/kill-switch.ts"
import { AttributionBackfills } from "../accounts/entitlements/backfills.ts"
import { ProfileLifecycle, TrackingKeys } from "../accounts/profiles/lifecycle.ts"
import { Definitions } from "../attribution/definitions/service.ts"
import { ConnectionsArchive } from "../connections/archive.ts"
import { Connections } from "../connections/service.ts"
import { StageOutcomes } from "../connections/stages/outcomes.ts"
import { PushReceivers } from "../connections/hooks/receivers.ts"
import { CommerceHooks } from "../ingestion/commerce/orders/hooks.ts"
import { CrmOutcomes } from "../ingestion/crm-outcomes/service.ts"
import { CardgwPayments } from "../ingestion/sync/cardgw.ts"
import { ConnectionSync } from "../ingestion/sync/service.ts"
import { TrackingService } from "../ingestion/tracking/tracker/service.ts"
import { pushedMessages } from "../messaging/inbox/pushes.ts"
import { Inbox } from "../messaging/inbox/service.ts"
import { WebhookSubscriptions } from "../webhooks/subscriptions/service.ts"
import { AudienceHoldouts } from "../exports/audiences/holdouts.ts"
import { CustomerLists } from "../exports/audiences/service.ts"
import { ExperimentHoldouts } from "../experiments/holdouts.ts"
import { ExperimentAudiences } from "../experiments/ports.ts"
import { Calibrations } from "../analytics/calibration.ts"
import { ExperimentCalibrations } from "../experiments/calibration.ts"

/** A new profile's tracking key is the web tracker's (ingestion). */
const TrackingKeysLayer = Layer.effect(TrackingKeys)(
  TrackingService.useSync((tracking) => ({ ensure: tracking.ensureKeyOf }))
).pipe(Layer.provide(TrackingService.layer))

/**
 * An archived profile's data above accounts, in the archiving transaction and in this order:
 * webhook subscriptions paused, then what references the connections (sync jobs, synced
 * structure), then the connections with their hand-offs and provider events.
 */
const ProfileLifecycleLayer = Layer.effect(ProfileLifecycle)(
  Effect.gen(function*() {
    const subscriptions = yield* WebhookSubscriptions
    const sync = yield* ConnectionSync
    const connections = yield* ConnectionsArchive
    return {
      archived: (profile) =>
        Effect.gen(function*() {
          yield* subscriptions.pauseForWorkspace(profile.workspaceId)
          yield* sync.forgetProfile(profile.profileId)
          yield* connections.forgetProfile(profile.profileId)
        })
    }
  })
).pipe(Layer.provide([WebhookSubscriptions.layer, ConnectionSync.layer, ConnectionsArchive.layer]))

/** The attribution entitlement's backfills are provider syncs (ingestion); the Profile entity needs them too (core.ts). */
export const AttributionBackfillsLayer = Layer.effect(AttributionBackfills)(
  ConnectionSync.useSync((sync) => ({ enqueue: sync.enqueueBackfills }))
).pipe(Layer.provide(ConnectionSync.layer))

/** What a profile's provisioning and archiving reach above accounts (the routes and the CLI's quickstart). */
export const ProfilePortsLayer = Layer.mergeAll(TrackingKeysLayer, ProfileLifecycleLayer)

/** The kill switch's connections: the connections context stops and revokes them. */
const CommerceAppConnectionsLayer = Layer.effect(CommerceAppConnections)(
  Connections.useSync((connections) => ({
    stopChannels: connections.stopCommerceAppChannels,
    revokeAll: connections.revokeCommerceAppConnections
  }))
).pipe(Layer.provide(Connections.layer))

/** A CRM stage's mapping reads attribution's outcome definitions. */
const StageOutcomesLayer = Layer.effect(StageOutcomes)(
  Definitions.useSync((definitions) => ({ outcomeDefinitions: definitions.outcomeDefinitions }))
).pipe(Layer.provide(Definitions.layer))

/** A provider push's orders, payments and CRM deals go to ingestion, its inbound messages to the inbox. */
const PushReceiversLayer = Layer.effect(PushReceivers)(
  Effect.gen(function*() {
    const commerce = yield* CommerceHooks
    const crm = yield* CrmOutcomes
    const cardgw = yield* CardgwPayments
    const inbox = yield* Inbox
    return {
      commerce: commerce.handle,
      messages: (provider, body) => {
        const pushes = pushedMessages(provider, body)
        return Effect.as(
          Effect.forEach(pushes, (pushed) => inbox.ingestPushed(provider, pushed.accountId, pushed.messageId), { discard: true }),
          pushes
        )
      },
      crmDeal: crm.fromCallback,
      cardPayment: (body) => Effect.asVoid(cardgw.hook(body))
    }
  })
).pipe(Layer.provide([CrmOutcomes.layer, CardgwPayments.layer, CommerceHooks.layer]), Layer.provide(Inbox.layer))

/** A customer-list upload leaves out the running audience holdouts' customers (experiments, issue 32). */
export const AudienceHoldoutsLayer = Layer.effect(AudienceHoldouts)(
  ExperimentHoldouts.useSync((holdouts) => ({ heldOut: holdouts.heldOut, uploaded: holdouts.uploaded }))
).pipe(Layer.provide(ExperimentHoldouts.layer))

/** An audience holdout's start and stop re-upload the customer list (exports); its failures wait for the daily refresh. */
const ExperimentAudiencesLayer = Layer.effect(ExperimentAudiences)(
  CustomerLists.useSync((lists) => ({
    refresh: (profileId) =>
      lists.resync(profileId).pipe(
        Effect.catch((error) => Effect.logWarning("experiment: customer list re-upload failed; the daily refresh retries", { profileId, error: error._tag }))
      )
  }))
).pipe(Layer.provide(CustomerLists.layer), Layer.provide(AudienceHoldoutsLayer))

/** The campaign and overview reads' `?calibrated=true`: the experiments' measured factors (decision 0124). */
export const CalibrationsLayer = Layer.effect(Calibrations)(
  ExperimentCalibrations.useSync((calibrations) => ({ factors: calibrations.factors }))
).pipe(Layer.provide(ExperimentCalibrations.layer))

/** Every port, for the routes and whatever else reaches a service that needs one. */
export const PortsLayer = Layer.mergeAll(
  ProfilePortsLayer,
  CommerceAppConnectionsLayer,
  StageOutcomesLayer,
  PushReceiversLayer,
  AudienceHoldoutsLayer,
  ExperimentAudiencesLayer,
  CalibrationsLayer
)
