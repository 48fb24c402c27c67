/**
 * Webhook subscriptions (routes.tsv Webhooks; decision 0076): a profile's endpoints, registered
 * with the profile's API key (an OAuth app's key for the profiles it provisioned, or a profile
 * key), each URL held to the public-host rule (decision 0077), the `whsec_` secret shown once at
 * creation and at each rotation (the previous one keeps signing for 24 hours), pause and resume.
 */
import { Context, Duration, Effect, Layer, Option } from "effect"
import { type Backlog, BACKLOG_COUNT_CAP, BACKLOG_RATE_CAP, isUuid, NO_BACKLOG } from "../../../schema/common.ts"
import { type DatabaseUnavailable, type InvalidParameter, NotFound, ValidationError } from "../../../schema/errors.ts"
import {
  type CreateWebhookSubscription,
  DEFAULT_EVENT_TYPES,
  type UpdateWebhookSubscription,
  WEBHOOK_EVENT_TYPES,
  type WebhookSubscription,
  type WebhookSubscriptionsQuery
} from "../../../schema/webhooks.ts"
import type { PrincipalShape, ProfileContext } from "../../kernel/principal.ts"
import { AppConfig } from "../../platform/config.ts"
import { parseCursor, toPage } from "../../platform/pagination.ts"
import { SecretBox } from "../../platform/secret-box.ts"
import { checkTarget, parseAllowList } from "../../platform/public-host.ts"
import { WebhookDeliveriesRepo } from "../delivery/repo.ts"
import { backlogOf } from "../../platform/backlog.ts"
import { WebhookSettings } from "../delivery/service.ts"
import { newSecret } from "../delivery/signing.ts"
import { type SubscriptionRow, WebhookSubscriptionsRepo } from "./repo.ts"

/** A paused subscription keeps at most this much of its backlog: older deliveries are dropped (decision 0120). */
export const PAUSED_BACKLOG_MAX_AGE = Duration.hours(72)
/** A dropped delivery's `last_error`. */
export const PAUSED_BACKLOG_EXPIRED = "paused_backlog_expired"
/** The `status_reason` of a paused subscription whose backlog was dropped (when it had none). */
export const PAUSED_BACKLOG_DROPPED = "paused_backlog_dropped"
/** Rows ended per statement of the drop; it repeats until nothing is left to drop. */
const DROP_CHUNK = 5_000

const render = (row: SubscriptionRow, backlog: Backlog): WebhookSubscription => ({
  id: row.id,
  url: row.url,
  description: row.description,
  event_types: row.event_types,
  status: row.status,
  status_reason: row.status_reason,
  previous_secret_expires_at: row.previous_secret_expires_at,
  created_at: row.created_at,
  updated_at: row.updated_at,
  backlog
})

/** The event types in the catalogue's order, each once. */
const normalizeTypes = (types: ReadonlyArray<string>) => WEBHOOK_EVENT_TYPES.filter((type) => types.includes(type))

type Failure = DatabaseUnavailable | NotFound | ValidationError

export class WebhookSubscriptions extends Context.Service<WebhookSubscriptions, {
  readonly create: (principal: PrincipalShape, profile: ProfileContext, body: CreateWebhookSubscription) =>
    Effect.Effect<WebhookSubscription & { readonly secret: string }, DatabaseUnavailable | ValidationError>
  readonly list: (profile: ProfileContext, query: WebhookSubscriptionsQuery) => Effect.Effect<
    { readonly data: ReadonlyArray<WebhookSubscription>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } },
    DatabaseUnavailable | InvalidParameter
  >
  readonly update: (profile: ProfileContext, id: string, body: UpdateWebhookSubscription) => Effect.Effect<WebhookSubscription, Failure>
  readonly remove: (profile: ProfileContext, id: string) => Effect.Effect<{ readonly id: string; readonly deleted: true }, DatabaseUnavailable | NotFound>
  readonly rotateSecret: (profile: ProfileContext, id: string) =>
    Effect.Effect<WebhookSubscription & { readonly secret: string }, DatabaseUnavailable | NotFound>
  /**
   * Archiving a workspace (src/accounts/profiles, through src/main/ports.ts): its subscriptions
   * paused, not deleted, so they stay visible to an operator restoring it; in the caller's transaction.
   */
  readonly pauseForWorkspace: (workspaceId: string) => Effect.Effect<void, DatabaseUnavailable>
  /**
   * Bounds paused subscriptions' backlogs (decision 0120): their deliveries queued more than
   * `PAUSED_BACKLOG_MAX_AGE` ago end `failed` (`paused_backlog_expired`), the rest of each batch
   * moves up, and the subscription's `status_reason` says so. Answers how many batches lost rows.
   */
  readonly dropPausedBacklog: Effect.Effect<number, DatabaseUnavailable>
  /** The `limit` subscriptions whose oldest pending delivery waited longest, with their backlogs (the metrics). */
  readonly backlogLeaders: (limit: number) => Effect.Effect<ReadonlyArray<{ readonly id: string; readonly backlog: Backlog }>, DatabaseUnavailable>
}>()("svc/WebhookSubscriptions") {
  static readonly layer = Layer.effect(WebhookSubscriptions)(
    Effect.gen(function*() {
      const repo = yield* WebhookSubscriptionsRepo
      const deliveries = yield* WebhookDeliveriesRepo
      const box = yield* SecretBox
      const config = yield* AppConfig
      const settings = yield* WebhookSettings
      const allow = parseAllowList(config.webhookAllowHosts ?? [])
      const dnsServers = config.dnsServers ?? []

      /** The public-host rule at registration: a refusal is 400 `validation_error` naming why. */
      const checked = (url: string) =>
        Effect.catchTag(
          checkTarget(url, allow, dnsServers),
          "TargetRefused",
          (refused) => Effect.fail(new ValidationError({ message: `url: ${refused.message}`, reason: refused.reason }))
        )

      const withBacklogs = (rows: ReadonlyArray<SubscriptionRow>) =>
        Effect.map(
          deliveries.backlogs(rows.map((row) => row.id), BACKLOG_COUNT_CAP, BACKLOG_RATE_CAP),
          (found) => new Map(found.map((row) => [row.id, row]))
        )
      const rendered = (row: SubscriptionRow) => Effect.map(withBacklogs([row]), (found) => render(row, backlogOf(found.get(row.id))))

      const notFound = () => new NotFound({ message: "No such webhook subscription" })
      const idOf = (id: string) => isUuid(id) ? Effect.succeed(id.toLowerCase()) : Effect.fail(notFound())

      const create = Effect.fn("Webhooks.createSubscription")(function*(
        principal: PrincipalShape,
        profile: ProfileContext,
        body: CreateWebhookSubscription
      ) {
        const target = yield* checked(body.url)
        const secret = newSecret()
        const row = yield* repo.insert({
          id: crypto.randomUUID(),
          profileId: profile.profileId,
          workspaceId: profile.workspaceId,
          apiKeyId: principal.kind === "api_key" ? principal.keyId : null,
          oauthAppId: principal.kind === "api_key" ? principal.oauthAppId : null,
          url: target.url.toString(),
          description: body.description ?? null,
          eventTypes: normalizeTypes(body.event_types ?? DEFAULT_EVENT_TYPES),
          secretSealed: box.seal(secret)
        })
        return { ...render(row, NO_BACKLOG), secret }
      })

      const list = Effect.fn("Webhooks.listSubscriptions")(function*(profile: ProfileContext, query: WebhookSubscriptionsQuery) {
        const limit = query.limit ?? 50
        const after = Option.map(
          yield* parseCursor(query.cursor, (keyset) => !Number.isNaN(Date.parse(keyset.createdAt)) && isUuid(keyset.id)),
          (keyset) => ({ at: keyset.createdAt, id: keyset.id })
        )
        const rows = yield* repo.list(profile.profileId, after, limit)
        const backlogs = yield* withBacklogs(rows.slice(0, limit))
        return toPage(rows, limit, (row) => render(row, backlogOf(backlogs.get(row.id))))
      })

      const update = Effect.fn("Webhooks.updateSubscription")(function*(profile: ProfileContext, rawId: string, body: UpdateWebhookSubscription) {
        const id = yield* idOf(rawId)
        const current = yield* repo.byId(id)
        if (Option.isNone(current) || current.value.profile_id !== profile.profileId) return yield* notFound()
        // A new URL, or a subscription turned active again, is checked now (a disabled one may point elsewhere by then).
        const url = body.url ?? current.value.url
        const target = body.url !== undefined || (body.status === "active" && current.value.status !== "active")
          ? Option.some(yield* checked(url))
          : Option.none()
        const updated = yield* repo.update(profile.profileId, id, {
          ...(Option.isSome(target) && body.url !== undefined ? { url: target.value.url.toString() } : {}),
          ...(body.description !== undefined ? { description: body.description } : {}),
          ...(body.event_types !== undefined ? { eventTypes: normalizeTypes(body.event_types) } : {}),
          ...(body.status !== undefined ? { status: body.status } : {})
        })
        if (Option.isNone(updated)) return yield* notFound()
        return yield* rendered(updated.value)
      })

      const remove = Effect.fn("Webhooks.deleteSubscription")(function*(profile: ProfileContext, rawId: string) {
        const id = yield* idOf(rawId)
        if (!(yield* repo.remove(profile.profileId, id))) return yield* notFound()
        // What was waiting for it will never be sent.
        yield* deliveries.failPending(id, "subscription_deleted")
        return { id, deleted: true as const }
      })

      const rotateSecret = Effect.fn("Webhooks.rotateSecret")(function*(profile: ProfileContext, rawId: string) {
        const id = yield* idOf(rawId)
        const secret = newSecret()
        const rotated = yield* repo.rotate(profile.profileId, id, box.seal(secret), Duration.toSeconds(settings.rotationGrace))
        if (Option.isNone(rotated)) return yield* notFound()
        return { ...(yield* rendered(rotated.value)), secret }
      })

      const pauseForWorkspace = Effect.fn("Webhooks.pauseForWorkspace")(function*(workspaceId: string) {
        yield* repo.pauseForWorkspace(workspaceId)
      })

      const dropChunk = deliveries.transaction(Effect.gen(function*() {
        const batches = yield* deliveries.dropPausedExpired(Duration.toSeconds(PAUSED_BACKLOG_MAX_AGE), PAUSED_BACKLOG_EXPIRED, DROP_CHUNK)
        // A dropped head held its batch: the next row of each becomes the head, to go out on resume.
        yield* deliveries.handOn(batches)
        yield* repo.markBacklogDropped([...new Set(batches.map((batch) => batch.subscription_id))], PAUSED_BACKLOG_DROPPED)
        return batches.length
      }))

      const dropPausedBacklog = Effect.gen(function*() {
        let total = 0
        // Each chunk ends at least one row for good, so this stops.
        while (true) {
          const dropped = yield* dropChunk
          if (dropped === 0) return total
          total += dropped
        }
      }).pipe(Effect.withSpan("Webhooks.dropPausedBacklog"))

      const backlogLeaders = Effect.fn("Webhooks.backlogLeaders")(function*(limit: number) {
        const rows = yield* deliveries.backlogLeaders(limit, BACKLOG_COUNT_CAP, BACKLOG_RATE_CAP)
        return rows.map((row) => ({ id: row.id, backlog: backlogOf(row) }))
      })

      return { create, list, update, remove, rotateSecret, pauseForWorkspace, dropPausedBacklog, backlogLeaders }
    })
  ).pipe(Layer.provide([WebhookSubscriptionsRepo.layer, WebhookDeliveriesRepo.layer]))
}
