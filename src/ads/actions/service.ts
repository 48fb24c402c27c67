/**
 * Ad actions (issue 19; api-endpoints.md "Ad actions"; decisions 0068-0070): what the routes and,
 * later, a recommendation's apply call. This side resolves everything that does not need the
 * object's live state and refuses before the ad platform is written: one usable ad-platform
 * connection (409 `adplatform_connection_required`, decision 0110), the object is the profile's
 * (404), the connection holds the manage-ads grant (403), the person on record for a budget. The entity of the
 * object (cluster/AdSet.ts, cluster/Campaign.ts) then runs the live read, the checks, the write
 * and the ledger (engine.ts). Every attempt on a resolved connection leaves one audit row.
 */
import { Context, Effect, Layer, Option, Stream } from "effect"
import { AdSet, Campaign } from "./entities.ts"
import { routeProfileCall } from "../../platform/entity-calls.ts"
import type { ActionEntry, AppliedByBasis, BudgetAnswer, BudgetChange, CampaignStatus } from "../../../schema/ad-actions.ts"
import {
  AdplatformConnectionRequired,
  AdplatformWritePermissionMissing,
  type DatabaseUnavailable,
  NotFound,
  type ServiceUnavailable,
  unprocessable,
  ValidationError
} from "../../../schema/errors.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import type { PrincipalShape, ProfileContext } from "../../kernel/principal.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { SecretBox } from "../../platform/secret-box.ts"
import { AdPlatform } from "../../connections/providers/adplatform/port.ts"
import type { ProviderError } from "../../connections/providers/errors.ts"
import type { ProviderSession } from "../../connections/providers/oauth/port.ts"
import { type ActionCommand, type ActionError, type ActionOutcome, fromProvider } from "./engine.ts"
import { type AdConnection, AdActionsRepo, type Level } from "./repo.ts"

/** The ad platform's permission that lets a grant write ads. */
export const MANAGE_ADS = "ads_management"

/** A budget change: the object (its platform id) and the new value of one budget field, in minor units. */
export interface BudgetTarget {
  readonly level: "ad_set" | "campaign"
  readonly id: string
  readonly field: "daily" | "lifetime"
  readonly minor: number
}

/** The person a budget change is recorded against, and on what basis. */
export interface PersonOnRecord {
  readonly appliedBy: string
  readonly basis: AppliedByBasis
}

type Failure = ActionError | ServiceUnavailable | DatabaseUnavailable

interface Resolved {
  readonly connection: AdConnection
  /** The entity instance that serialises writes to the object: the ad set for ads and ad sets, the campaign for campaigns. */
  readonly entity: { readonly kind: "ad_set" | "campaign"; readonly id: string }
}

export class AdActions extends Context.Service<AdActions, {
  readonly pauseAd: (actor: PrincipalShape, profile: ProfileContext, adId: string) => Effect.Effect<ActionEntry, Failure>
  readonly resumeAd: (actor: PrincipalShape, profile: ProfileContext, adId: string) => Effect.Effect<ActionEntry, Failure>
  readonly adSetBudget: (
    actor: PrincipalShape,
    profile: ProfileContext,
    adSetId: string,
    body: BudgetChange
  ) => Effect.Effect<BudgetAnswer, Failure>
  readonly campaignStatus: (profile: ProfileContext, campaignId: string) => Effect.Effect<CampaignStatus, Failure>
  readonly pauseCampaign: (actor: PrincipalShape, profile: ProfileContext, campaignId: string) => Effect.Effect<ActionEntry, Failure>
  readonly resumeCampaign: (actor: PrincipalShape, profile: ProfileContext, campaignId: string) => Effect.Effect<ActionEntry, Failure>
  readonly campaignBudget: (
    actor: PrincipalShape,
    profile: ProfileContext,
    campaignId: string,
    body: BudgetChange
  ) => Effect.Effect<BudgetAnswer, Failure>
  readonly rollback: (actor: PrincipalShape, profile: ProfileContext, actionId: string) => Effect.Effect<ActionEntry, Failure>
  /**
   * A budget change on behalf of a basis the caller settled (a recommendation's apply passes
   * `app_shadow_owner` or `applied_by`): the same guardrails, ledger and audit as the routes.
   */
  readonly changeBudget: (
    actor: PrincipalShape,
    profile: ProfileContext,
    target: BudgetTarget,
    person: PersonOnRecord
  ) => Effect.Effect<BudgetAnswer, Failure>
  /**
   * URL tags on one ad's creative (a new creative at the platform, decision 0088): the same
   * refusals, entity, ledger and audit as the other ad writes.
   */
  readonly setUrlTags: (actor: PrincipalShape, profile: ProfileContext, adId: string, urlTags: string) => Effect.Effect<ActionEntry, Failure>
  /**
   * Whether the profile can write ads at all, before any object is named: a usable ad-platform
   * connection (else 409 `adplatform_connection_required`) holding the manage-ads grant (else 403).
   */
  readonly writeGate: (
    profile: ProfileContext
  ) => Effect.Effect<void, AdplatformConnectionRequired | AdplatformWritePermissionMissing | DatabaseUnavailable>
  /** Decision 0069: who a write is recorded against, for a caller naming `applied_by` or not. */
  readonly personOnRecord: (actor: PrincipalShape, profile: ProfileContext, appliedBy: string | undefined) => Effect.Effect<PersonOnRecord, Failure>
  /** A pause or resume on behalf of a basis the caller settled (a recommendation's apply, a switchback's day). */
  readonly setStatus: (
    actor: PrincipalShape,
    profile: ProfileContext,
    target: { readonly level: "ad" | "ad_set" | "campaign"; readonly id: string; readonly op: "pause" | "resume" },
    person: PersonOnRecord | null
  ) => Effect.Effect<ActionEntry, Failure>
}>()("svc/AdActions") {
  static readonly layer = Layer.effect(AdActions)(
    Effect.gen(function*() {
      const repo = yield* AdActionsRepo
      const platform = yield* AdPlatform
      const sessions = yield* ConnectionSessions
      const audit = yield* AuditLog
      const box = yield* SecretBox
      const adSets = yield* AdSet.client
      const campaigns = yield* Campaign.client

      const openSession = (connection: AdConnection) =>
        Effect.mapError(sessions.session(connection.id), (e) => e._tag === "DatabaseUnavailable" ? e : fromProvider(e))

      /**
       * The connection to act through: the one the synced copy names, else the only usable one.
       * Without a usable connection the answer is 409 whatever the id (decision 0110): the ad
       * platform's ids are only known to be the profile's through a connection, so an unknown id
       * is 404 only once a connection can look it up, as the URL tags' write gate answers.
       */
      const pickConnection = Effect.fn("AdActions.pickConnection")(function*(profile: ProfileContext, level: Level, id: string) {
        const all = yield* repo.connections(profile.profileId)
        const usable = all.filter((c) => c.status !== "reconnect_required" && c.external_account_id !== null)
        const synced = yield* repo.synced(profile.profileId, level, id)
        const named = Option.flatMap(synced, (row) => Option.fromNullishOr(usable.find((c) => c.id === row.connection_id)))
        const entity = Option.map(synced, (row) =>
          level === "campaign" ? { kind: "campaign" as const, id } : { kind: "ad_set" as const, id: row.ad_set_id ?? id })
        if (Option.isSome(named)) return { connection: named.value, synced: entity }
        if (usable.length === 1 && usable[0] !== undefined) return { connection: usable[0], synced: entity }
        return yield* new AdplatformConnectionRequired({
          message: usable.length === 0
            ? "The profile has no usable ad-platform connection: connect (or reconnect) the ad account first."
            : "The profile has several ad-platform connections and none is named for this object.",
          reason: usable.length === 0 ? "no_usable_connection" : "several_connections"
        })
      })

      /** The entity key of the object, read live (which also proves it is on the connection's account). */
      const entityOf = (session: ProviderSession, level: Level, id: string) =>
        Effect.mapError<Resolved["entity"], ProviderError, never, ActionError>(
          level === "ad"
            ? Effect.map(platform.getAd(session, id), (ad) => ({ kind: "ad_set" as const, id: ad.ad_set_id }))
            : level === "ad_set"
            ? Effect.map(platform.getAdSet(session, id), (set) => ({ kind: "ad_set" as const, id: set.id }))
            : Effect.map(platform.getCampaign(session, id), (c) => ({ kind: "campaign" as const, id: c.id })),
          fromProvider
        )

      const writable = (connection: AdConnection) =>
        connection.scopes.includes(MANAGE_ADS)
          ? Effect.void
          : Effect.fail(new AdplatformWritePermissionMissing({
            message: "The ad-platform connection lacks the manage-advertisements grant. Reconnect it and grant it.",
            reconnect_required: true
          }))

      /** Ownership and the write grant on the picked connection, in the spec's order (404 before 403), nothing written. */
      const resolve = Effect.fn("AdActions.resolve")(function*(
        picked: { readonly connection: AdConnection; readonly synced: Option.Option<Resolved["entity"]> },
        level: Level,
        id: string
      ) {
        const { connection, synced } = picked
        // In the synced copy: the profile's, and its entity known without touching the platform.
        if (Option.isSome(synced)) {
          yield* writable(connection)
          return { connection, entity: synced.value } satisfies Resolved
        }
        // Otherwise looked up live first: a foreign id is 404 before any 403.
        const session = yield* openSession(connection)
        const entity = yield* entityOf(session, level, id)
        yield* writable(connection)
        return { connection, entity } satisfies Resolved
      })

      const call = (entity: Resolved["entity"], command: ActionCommand): Effect.Effect<ActionOutcome, Failure> =>
        routeProfileCall(
          entity.kind === "campaign" ? campaigns(entity.id).Act(command) : adSets(entity.id).Act(command),
          "ad_action_timeout"
        )

      /** One audit row per attempt once the connection is resolved, refusals included. */
      const audited = <A extends { readonly action_id?: string; readonly outcome?: string }>(
        actor: PrincipalShape,
        profile: ProfileContext,
        what: { readonly action: string; readonly level: Level; readonly id: string; readonly connectionId: string },
        effect: Effect.Effect<A, Failure>
      ) =>
        Effect.gen(function*() {
          const exit = yield* Effect.exit(effect)
          const failure = exit._tag === "Failure" ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
          const error = failure !== undefined && failure._tag === "Fail" ? failure.error : undefined
          yield* audit.record({
            actor,
            action: `ad_action.${what.action}`,
            targetKind: what.level,
            targetId: what.id,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            details: {
              connection_id: what.connectionId,
              ...(exit._tag === "Success"
                ? { action_id: exit.value.action_id ?? null, outcome: exit.value.outcome ?? null }
                : { refused: error !== undefined && "_tag" in error ? error._tag : "defect" })
            }
          })
          return yield* exit
        })

      /**
       * Resolution, then the audited entity call. The person on record is settled inside the
       * audited part, after the 404/403 refusals: a refused person on a resolved connection is an
       * audited attempt too.
       */
      const act = Effect.fn("AdActions.act")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        level: Level,
        id: string,
        op: ActionCommand["op"],
        extra: {
          readonly budget: ActionCommand["budget"]
          readonly person: Effect.Effect<PersonOnRecord | null, Failure>
          readonly actionId?: string
          readonly urlTags?: string
        }
      ) {
        const picked = yield* pickConnection(profile, level, id)
        return yield* audited(actor, profile, { action: op, level, id, connectionId: picked.connection.id }, Effect.gen(function*() {
          const resolved = yield* resolve(picked, level, id)
          const person = yield* extra.person
          const outcome = yield* call(resolved.entity, {
            profileId: profile.profileId,
            connectionId: resolved.connection.id,
            level,
            objectId: id,
            op,
            budget: extra.budget,
            actionId: extra.actionId ?? null,
            appliedBy: person?.appliedBy ?? null,
            basis: person?.basis ?? null,
            ...(extra.urlTags === undefined ? {} : { urlTags: extra.urlTags })
          })
          return { ...outcome, person, action_id: outcome.entry.action_id, outcome: outcome.entry.outcome }
        }))
      })

      /** Decision 0069: who a budget change is recorded against. */
      const personOnRecord = Effect.fn("AdActions.personOnRecord")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        explicit: string | undefined
      ) {
        const ownerOrAdmin = (userId: string) =>
          Effect.map(
            repo.workspaceRole(profile.workspaceId, userId),
            (role) => Option.isSome(role) && (role.value === "owner" || role.value === "admin")
          )
        const refuse = (message: string) => unprocessable(message, { reason: "applied_by_not_allowed" })
        if (actor.kind === "user_token" || actor.kind === "session") {
          if (explicit === undefined || explicit === actor.userId) return { appliedBy: actor.userId, basis: "person" as const }
          if (!(yield* ownerOrAdmin(actor.userId))) {
            return yield* refuse("applied_by must be yourself unless you are a workspace owner or admin.")
          }
          if (!(yield* ownerOrAdmin(explicit))) return yield* refuse("applied_by must be an active owner or admin of the workspace.")
          return { appliedBy: explicit, basis: "applied_by" as const }
        }
        if (explicit !== undefined) {
          if (!(yield* ownerOrAdmin(explicit))) return yield* refuse("applied_by must be an active owner or admin of the workspace.")
          return { appliedBy: explicit, basis: "applied_by" as const }
        }
        if (actor.kind === "api_key" && actor.oauthAppId !== null) {
          const owner = yield* repo.activeOwner(profile.workspaceId)
          if (Option.isNone(owner)) return yield* refuse("The workspace has no active owner to record the change against: send applied_by.")
          return { appliedBy: owner.value, basis: "app_shadow_owner" as const }
        }
        return yield* new ValidationError({
          message: "body.applied_by: a budget change needs a person on record (an owner or admin user id)."
        })
      })

      const budgetField = (body: BudgetChange) => {
        const daily = body.new_daily_budget_minor
        const lifetime = body.new_lifetime_budget_minor
        if ((daily === undefined) === (lifetime === undefined)) {
          return Effect.fail(new ValidationError({
            message: "body: send exactly one of new_daily_budget_minor and new_lifetime_budget_minor."
          }))
        }
        return Effect.succeed(
          daily !== undefined ? { field: "daily" as const, minor: daily } : { field: "lifetime" as const, minor: lifetime ?? 0 }
        )
      }

      const budgetAct = Effect.fn("AdActions.budgetAct")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        target: BudgetTarget,
        person: Effect.Effect<PersonOnRecord, Failure>
      ) {
        const done = yield* act(actor, profile, target.level, target.id, "budget", {
          budget: { field: target.field, minor: target.minor },
          person
        })
        const budget = done.budget ?? { budget_type: target.field, previous_budget_minor: target.minor, budget_minor: target.minor }
        return { ...done.entry, ...budget, applied_by: done.person?.appliedBy ?? "" } satisfies BudgetAnswer
      })

      const changeBudget = (
        actor: PrincipalShape,
        profile: ProfileContext,
        target: BudgetTarget,
        person: PersonOnRecord
      ) => budgetAct(actor, profile, target, Effect.succeed(person))

      const budgetRoute = (level: "ad_set" | "campaign") =>
        Effect.fn("AdActions.budget")(function*(actor: PrincipalShape, profile: ProfileContext, id: string, body: BudgetChange) {
          const { field, minor } = yield* budgetField(body)
          return yield* budgetAct(actor, profile, { level, id, field, minor }, personOnRecord(actor, profile, body.applied_by))
        })

      const setStatus = Effect.fn("AdActions.setStatus")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        target: { readonly level: "ad" | "ad_set" | "campaign"; readonly id: string; readonly op: "pause" | "resume" },
        person: PersonOnRecord | null
      ) {
        const outcome = yield* act(actor, profile, target.level, target.id, target.op, { budget: null, person: Effect.succeed(person) })
        return outcome.entry
      })

      const setUrlTags = Effect.fn("AdActions.setUrlTags")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        adId: string,
        urlTags: string
      ) {
        const outcome = yield* act(actor, profile, "ad", adId, "url_tags", { budget: null, person: Effect.succeed(null), urlTags })
        return outcome.entry
      })

      const writeGate = Effect.fn("AdActions.writeGate")(function*(profile: ProfileContext) {
        const usable = (yield* repo.connections(profile.profileId)).filter((c) =>
          c.status !== "reconnect_required" && c.external_account_id !== null
        )
        if (usable.length === 0) {
          return yield* new AdplatformConnectionRequired({
            message: "The profile has no usable ad-platform connection: connect (or reconnect) the ad account first.",
            reason: "no_usable_connection"
          })
        }
        if (!usable.some((c) => c.scopes.includes(MANAGE_ADS))) {
          return yield* new AdplatformWritePermissionMissing({
            message: "The ad-platform connection lacks the manage-advertisements grant. Reconnect it and grant it.",
            reconnect_required: true
          })
        }
      })

      const rollback = Effect.fn("AdActions.rollback")(function*(actor: PrincipalShape, profile: ProfileContext, actionId: string) {
        const row = yield* repo.find(profile.profileId, actionId)
        if (Option.isNone(row)) return yield* new NotFound({ message: "No ad action with this id on the profile." })
        const { level, object_id: id } = row.value
        const person = row.value.applied_by === null || row.value.applied_by_basis === null
          ? null
          : { appliedBy: row.value.applied_by, basis: row.value.applied_by_basis }
        const outcome = yield* act(actor, profile, level, id, "rollback", { budget: null, person: Effect.succeed(person), actionId })
        return outcome.entry
      })

      const campaignStatus = Effect.fn("AdActions.campaignStatus")(function*(profile: ProfileContext, campaignId: string) {
        const { connection } = yield* pickConnection(profile, "campaign", campaignId)
        const session = yield* openSession(connection)
        const live = yield* Effect.mapError(platform.getCampaign(session, campaignId), fromProvider)
        const sets = yield* Effect.mapError(
          Stream.runCollect(platform.adSets(session).pipe(Stream.filter((s) => s.campaign_id === campaignId && s.status === "active"))),
          fromProvider
        )
        const activeSets = new Set(sets.map((s) => s.id))
        const ads = yield* Effect.mapError(
          Stream.runCollect(platform.ads(session).pipe(Stream.filter((a) => a.campaign_id === campaignId && a.status === "active"))),
          fromProvider
        )
        const stopping = ads.filter((a) => activeSets.has(a.ad_set_id)).map((a) => ({ id: a.id, name: a.name }))
        const today = new Date()
        const since = new Date(today.getTime() - 6 * 86_400_000).toISOString().slice(0, 10)
        // Spend is context for the person confirming: an unreadable insights range answers null, not a failed status read.
        const spend = yield* Stream.runCollect(
          platform.insights(session, { since, until: today.toISOString().slice(0, 10) }).pipe(
            Stream.filter((row) => row.campaign_id === campaignId)
          )
        ).pipe(
          Effect.map((rows) => {
            const byDate = new Map<string, number>()
            for (const row of rows) byDate.set(row.date, (byDate.get(row.date) ?? 0) + row.spend_minor)
            return [...byDate.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([date, spend_minor]) => ({ date, spend_minor }))
          }),
          Effect.orElseSucceed(() => null)
        )
        const gone = live.status === "archived" || live.status === "deleted"
        const canWrite = connection.scopes.includes(MANAGE_ADS)
        const unavailable = (reason: string) => ({ available: false, reason })
        const available = { available: true, reason: null }
        const gate = (ok: boolean, reason: string) =>
          !canWrite ? unavailable("write_permission_missing") : gone ? unavailable(live.status) : ok ? available : unavailable(reason)
        const ownBudget = live.daily_budget_minor !== null || live.lifetime_budget_minor !== null
        const token = box.keyedHash(
          "campaign-confirm",
          [
            profile.profileId,
            campaignId,
            live.status,
            live.daily_budget_minor ?? "-",
            live.lifetime_budget_minor ?? "-",
            stopping.length
          ].join("|")
        )
        return {
          campaign_id: live.id,
          name: live.name,
          status: live.status,
          daily_budget_minor: live.daily_budget_minor,
          lifetime_budget_minor: live.lifetime_budget_minor,
          ads_a_pause_would_stop: stopping,
          recent_daily_spend: spend,
          actions: {
            pause: gate(live.status === "active", "already_paused"),
            resume: gate(live.status === "paused", "already_active"),
            budget: gate(ownBudget, "no_campaign_budget")
          },
          confirm_token: `ct_${token.slice(0, 43)}`
        } satisfies CampaignStatus
      })

      return {
        pauseAd: (actor, profile, id) => setStatus(actor, profile, { level: "ad", id, op: "pause" }, null),
        resumeAd: (actor, profile, id) => setStatus(actor, profile, { level: "ad", id, op: "resume" }, null),
        adSetBudget: budgetRoute("ad_set"),
        campaignStatus,
        pauseCampaign: (actor, profile, id) => setStatus(actor, profile, { level: "campaign", id, op: "pause" }, null),
        resumeCampaign: (actor, profile, id) => setStatus(actor, profile, { level: "campaign", id, op: "resume" }, null),
        campaignBudget: budgetRoute("campaign"),
        rollback,
        changeBudget,
        setUrlTags,
        writeGate,
        personOnRecord,
        setStatus
      }
    })
  ).pipe(Layer.provide([AdActionsRepo.layer, AuditLog.layer, ConnectionSessions.layer]))
}
