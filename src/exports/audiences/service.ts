import { Context, Effect, Layer, Option } from "effect"
import {
  CUSTOMER_LIST_CONSENT_LINES,
  CUSTOMER_LIST_CONSENT_V1,
  CUSTOMER_LIST_CONSENT_V2,
  CUSTOMER_LIST_FIELDS,
  type CustomerListBody,
  type CustomerListConsentVersion,
  customerListConsentText,
  type CustomerListField,
  type CustomerListLocale,
  type CustomerListPlatformDeletion,
  type CustomerListState
} from "../../../schema/audiences.ts"
import {
  AdplatformConnectionRequired,
  ConsentRequired,
  type DatabaseUnavailable,
  InvalidState,
  NotFound,
  PlatformSafeAudiencesDisabled,
  UnknownCustomerRef,
  unprocessable,
  type ValidationError
} from "../../../schema/errors.ts"
import { AdConnections } from "../../ads/actions/connections.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import type { PrincipalShape, ProfileContext } from "../../kernel/principal.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { defaultLease, LeaseLost, leaseSecondsOf, whileLeased } from "../../platform/lease.ts"
import { CatalogRepo } from "../catalog/repo.ts"
import { checkConsentContract } from "../consent.ts"
import { normaliseEmail, normalisePhone, sha256 } from "../pipeline/scrub.ts"
import { fromProvider, onPlatform, type PlatformFailure } from "../platform-safe/service.ts"
import { AdPlatform } from "../../connections/providers/adplatform/port.ts"
import type { ProviderError } from "../../connections/providers/errors.ts"
import type { ProviderSession } from "../../connections/providers/oauth/port.ts"
import { AudiencesRepo, type CustomerListRow, type ListLease, type PayingCustomer } from "./repo.ts"
import { AudienceHoldouts } from "./holdouts.ts"

// --- Customer lists (issue 20 part 5, decision 0100) ------------------------------------------

const BATCH_ROWS = 500
/** A request's hold on its list while it syncs: short, renewed by a heartbeat (decision 0119). */
const SYNC_LEASE = defaultLease
const SYNC_LEASE_SECONDS = leaseSecondsOf(SYNC_LEASE)
const LOOKALIKE_RATIO = 0.01
const VERSIONS: ReadonlyArray<CustomerListConsentVersion> = [CUSTOMER_LIST_CONSENT_V1, CUSTOMER_LIST_CONSENT_V2]

/** A version's `consent` hint: the version and the SHA-256 of its text per locale. */
export const customerListHint = (version: CustomerListConsentVersion) => ({
  version,
  text_hashes: Object.fromEntries(
    (Object.keys(CUSTOMER_LIST_CONSENT_LINES[version]) as Array<CustomerListLocale>).map((l) => [l, sha256(customerListConsentText(version, l))])
  )
})

/**
 * The repoint's consent contract (decision 0090, src/exports/consent.ts) over the two list
 * versions: malformed is 422; missing, an unknown version, another hash or older than 24 hours is
 * 409 `consent_required` with the hint of the version asked for (the newest when it is unknown).
 * Answers the version.
 */
export const checkListConsent = (
  consent: unknown,
  nowMs: number
): Effect.Effect<CustomerListConsentVersion, ConsentRequired | ValidationError> =>
  checkConsentContract(consent, nowMs, {
    versions: VERSIONS.map(customerListHint),
    fallback: customerListHint(CUSTOMER_LIST_CONSENT_V2),
    messages: {
      missing: "A confirmed customer list carries the merchant's consent.",
      unknownVersion: `The consent versions are ${VERSIONS.join(" and ")}.`,
      unknownHash: "text_hash is not the SHA-256 of the consent text of this version in a supported locale.",
      tooOld: "The consent is older than 24 hours: ask the merchant again."
    }
  })

/** Trimmed, lower-cased (names). */
const normaliseName = (name: string): string => name.trim().toLowerCase()

/** One platform row: SHA-256 of each normalised field, "" when unknown; null when neither email nor phone. */
export const hashedRow = (customer: PayingCustomer, fields: ReadonlyArray<CustomerListField>): ReadonlyArray<string> | null => {
  const email = customer.email === null ? "" : normaliseEmail(customer.email)
  const phone = customer.phone === null ? "" : normalisePhone(customer.phone)
  if (email === "" && phone === "") return null
  const value = (field: CustomerListField): string => {
    switch (field) {
      case "EMAIL":
        return email
      case "PHONE":
        return phone
      case "FN":
        return customer.first_name === null ? "" : normaliseName(customer.first_name)
      case "LN":
        return customer.last_name === null ? "" : normaliseName(customer.last_name)
      case "COUNTRY":
        return customer.country !== null && /^[A-Za-z]{2}$/.test(customer.country.trim()) ? customer.country.trim().toLowerCase() : ""
    }
  }
  return fields.map((f) => {
    const v = value(f)
    return v === "" ? "" : sha256(v)
  })
}

interface Built {
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
  readonly memberCount: number
  readonly excludedCount: number
  readonly skippedCount: number
}

const build = (customers: ReadonlyArray<PayingCustomer>, fields: ReadonlyArray<CustomerListField>): Built => {
  let excluded = 0
  let skipped = 0
  const rows: Array<ReadonlyArray<string>> = []
  for (const customer of customers) {
    if (customer.excluded) {
      excluded++
      continue
    }
    const row = hashedRow(customer, fields)
    if (row === null) skipped++
    else rows.push(row)
  }
  return { rows, memberCount: rows.length, excludedCount: excluded, skippedCount: skipped }
}

interface Block {
  readonly status: "disabled" | "unavailable"
  readonly reason: string
}

type Gate = PlatformSafeAudiencesDisabled | InvalidState | NotFound | DatabaseUnavailable

export type ProposalAnswer = {
  readonly proposal: true
  readonly consent_version: CustomerListConsentVersion
  readonly fields: ReadonlyArray<CustomerListField>
  readonly member_count: number
  readonly excluded_count: number
  readonly skipped_count: number
  readonly consent: ReadonlyArray<ReturnType<typeof customerListHint>>
}

export type PostAnswer =
  | { readonly kind: "proposal"; readonly proposal: ProposalAnswer }
  | { readonly kind: "confirmed"; readonly created: boolean; readonly state: CustomerListState }

export interface LookalikeAnswer {
  readonly created: boolean
  readonly profile_id: string
  readonly source_audience_id: string
  readonly lookalike: NonNullable<CustomerListState["lookalike"]>
}

type ListFailure = Gate | PlatformFailure | ConsentRequired | ValidationError

/** The off state and what the DELETE did at the platform (null: nothing was there). */
export interface RemoveAnswer extends CustomerListState {
  readonly platform_audience: CustomerListPlatformDeletion | null
}

/**
 * A failure that says the connection itself cannot act (disconnected, deleted, revoked, lacking the
 * grant), not a passing fault: a retry would fail the same way until the merchant reconnects.
 */
const connectionUnusable = (error: ProviderError): boolean =>
  error._tag === "ProviderAuthRevoked" || error._tag === "ProviderPermissionMissing"

export class CustomerLists extends Context.Service<CustomerLists, {
  readonly get: (profile: ProfileContext) => Effect.Effect<CustomerListState, NotFound | DatabaseUnavailable>
  readonly post: (actor: PrincipalShape, profile: ProfileContext, body: CustomerListBody) => Effect.Effect<PostAnswer, ListFailure>
  readonly remove: (actor: PrincipalShape, profile: ProfileContext) => Effect.Effect<RemoveAnswer, NotFound | InvalidState | DatabaseUnavailable | PlatformFailure>
  readonly lookalike: (actor: PrincipalShape, profile: ProfileContext, country: string) => Effect.Effect<LookalikeAnswer, Gate | PlatformFailure>
  /** Re-uploads an enabled list (after its exclusions changed); nothing when the list is off. */
  readonly resync: (profileId: string) => Effect.Effect<void, NotFound | InvalidState | DatabaseUnavailable | PlatformFailure>
  /**
   * The same, for a caller already holding the list's lease (the daily refresh, which renews it);
   * its writes are fenced by the lease: `LeaseLost` when another sync took the list over.
   */
  readonly resyncHeld: (lease: ListLease) => Effect.Effect<void, NotFound | DatabaseUnavailable | PlatformFailure | LeaseLost>
}>()("svc/CustomerLists") {
  static readonly layer = Layer.effect(CustomerLists)(
    Effect.gen(function*() {
      const repo = yield* AudiencesRepo
      const catalog = yield* CatalogRepo
      const adConnections = yield* AdConnections
      const sessions = yield* ConnectionSessions
      const platform = yield* AdPlatform
      const audit = yield* AuditLog
      const holdouts = yield* AudienceHoldouts


      const settingsOf = Effect.fn("CustomerLists.settings")(function*(profileId: string) {
        const row = yield* catalog.find(profileId, false)
        if (Option.isNone(row)) return yield* new NotFound({ message: "No such profile." })
        return row.value
      })

      /** Why the profile's lists cannot run now, if they cannot. */
      const blockOf = (settings: { readonly privacy_mode: string; readonly platform_safe_audiences: string }): Option.Option<Block> =>
        settings.privacy_mode === "hipaa"
          ? Option.some({ status: "unavailable" as const, reason: "privacy_mode_hipaa" })
          : settings.privacy_mode === "platform_safe" && settings.platform_safe_audiences !== "enabled"
          ? Option.some({ status: "disabled" as const, reason: "platform_safe_audiences_disabled" })
          : Option.none()

      const gate = Effect.fn("CustomerLists.gate")(function*(profileId: string) {
        const settings = yield* settingsOf(profileId)
        const block = blockOf(settings)
        if (Option.isSome(block)) {
          return yield* block.value.status === "unavailable"
            ? new InvalidState({ message: "A hipaa profile never uploads customers to an ad platform.", reason: "privacy_mode_hipaa" })
            : new PlatformSafeAudiencesDisabled({
              message: "Audiences are disabled on this Platform-Safe profile: enable them with platform_safe_audiences in the conversion-sync catalog."
            })
        }
        return settings
      })

      const stateOf = (profileId: string, row: Option.Option<CustomerListRow>, block: Option.Option<Block>): CustomerListState => {
        const r = Option.getOrNull(row)
        const enabled = r !== null && r.status === "enabled"
        return {
          profile_id: profileId,
          status: Option.isSome(block) ? block.value.status : enabled ? "enabled" : "off",
          reason: Option.isSome(block) ? block.value.reason : null,
          consent_version: enabled ? r.consent_version : null,
          fields: enabled && r.consent_version !== null ? [...CUSTOMER_LIST_FIELDS[r.consent_version]] : [],
          connection_id: r?.connection_id ?? null,
          ad_account_id: r?.ad_account_id ?? null,
          platform_audience_id: r?.platform_audience_id ?? null,
          member_count: r?.member_count ?? 0,
          excluded_count: r?.excluded_count ?? 0,
          skipped_count: r?.skipped_count ?? 0,
          last_synced_at: r?.last_synced_at ?? null,
          lookalike: r !== null && r.lookalike_id !== null && r.lookalike_country !== null && r.lookalike_created_at !== null
            ? { platform_audience_id: r.lookalike_id, ratio: LOOKALIKE_RATIO, country: r.lookalike_country, created_at: r.lookalike_created_at }
            : null
        }
      }

      const get = Effect.fn("CustomerLists.get")(function*(profile: ProfileContext) {
        const settings = yield* settingsOf(profile.profileId)
        return stateOf(profile.profileId, yield* repo.findList(profile.profileId), blockOf(settings))
      })

      /** The usable ad-platform connection: the named one, else the profile's single one. */
      const connectionFor = Effect.fn("CustomerLists.connectionFor")(function*(profileId: string, named: string | undefined) {
        const all = yield* adConnections.of(profileId)
        const usable = all.filter((c) => c.status !== "reconnect_required" && c.external_account_id !== null)
        if (named !== undefined) {
          const found = usable.find((c) => c.id === named)
          if (found === undefined) {
            return yield* new AdplatformConnectionRequired({ message: "connection_id is not a usable ad-platform connection of the profile.", reason: "unknown_connection" })
          }
          return found
        }
        if (usable.length === 1 && usable[0] !== undefined) return usable[0]
        return yield* new AdplatformConnectionRequired({
          message: usable.length === 0 ? "The profile has no usable ad-platform connection." : "The profile has several ad-platform connections: name one with connection_id.",
          reason: usable.length === 0 ? "no_usable_connection" : "several_connections"
        })
      })

      const inProgress = () =>
        new InvalidState({ message: "Another sync of this customer list is running; retry shortly.", reason: "customer_list_sync_in_progress" })

      /** A write of the sync holding `lease`; written nothing (the lease is another's), the sync stops. */
      const fenced = (lease: ListLease, write: Effect.Effect<boolean, DatabaseUnavailable>) =>
        Effect.flatMap(write, (ours) => ours ? Effect.void : Effect.fail(new LeaseLost({ jobId: lease.profileId })))

      /**
       * Runs `effect` holding the list's sync lease (409 invalid_state while another sync holds it),
       * renewed by a heartbeat while it runs (decision 0119). A lease lost meanwhile (renewals kept
       * from the database for a whole lease, and another sync took the list) stops it: 409 too.
       */
      const leased = <A, E>(profileId: string, effect: (lease: ListLease) => Effect.Effect<A, E | LeaseLost>) =>
        Effect.gen(function*() {
          const taken = yield* repo.claimList(profileId, SYNC_LEASE_SECONDS)
          if (Option.isNone(taken)) return yield* inProgress()
          const lease = taken.value
          const held = effect(lease).pipe(
            whileLeased(profileId, SYNC_LEASE, repo.renewList(lease, SYNC_LEASE_SECONDS)),
            Effect.ensuring(Effect.ignore(repo.releaseList(lease)))
          )
          return yield* Effect.catchIf(held, (error): error is LeaseLost => error instanceof LeaseLost, () => Effect.fail(inProgress()))
        })

      /** A full replace of the platform audience's members, in batches of one session. */
      const upload = Effect.fn("CustomerLists.upload")(function*(session: ProviderSession, audienceId: string, fields: ReadonlyArray<CustomerListField>, built: Built) {
        const sessionId = 1 + Math.floor(Math.random() * 2 ** 48)
        const batches = Math.max(1, Math.ceil(built.rows.length / BATCH_ROWS))
        for (let i = 0; i < batches; i++) {
          yield* (platform.replaceAudienceUsers(session, audienceId, {
            session_id: sessionId,
            batch_seq: i + 1,
            last_batch: i === batches - 1,
            estimated_total: built.rows.length,
            schema: fields,
            data: built.rows.slice(i * BATCH_ROWS, (i + 1) * BATCH_ROWS)
          }))
        }
      })

      /** Creates the platform audience when the list has none on this connection, then replaces its members. */
      const syncLocked = Effect.fn("CustomerLists.sync")(function*(
        lease: ListLease,
        connection: { readonly id: string; readonly external_account_id: string | null },
        version: CustomerListConsentVersion,
        consent: unknown
      ) {
        const profileId = lease.profileId
        const session = yield* onPlatform(sessions.session(connection.id))
        const before = Option.getOrNull(yield* repo.findList(profileId))
        let audienceId = before !== null && before.connection_id === connection.id ? before.platform_audience_id : null
        if (before !== null && before.platform_audience_id !== null && audienceId === null && before.connection_id !== null) {
          // Moved to another connection: the old audience goes when the old connection still works; an
          // unreachable one must not block the new list (its audience is then the merchant's to remove).
          yield* dropAudiences(before).pipe(Effect.catch((e) =>
            e._tag === "DatabaseUnavailable"
              ? Effect.fail(e)
              : Effect.logWarning("customer list: the previous connection's audience could not be deleted", { error: e._tag })
          ))
        }
        const create = Effect.gen(function*() {
          const made = yield* onPlatform(platform.createCustomAudience(session, {
            name: "Paying customers",
            description: "Customer list of paying customers (hashed), kept by the attribution service"
          }))
          yield* fenced(lease, repo.saveAudience(lease, { connectionId: connection.id, adAccountId: session.accountId, audienceId: made.id }))
          return made.id
        })
        const current = audienceId ?? (yield* create)
        const fields = CUSTOMER_LIST_FIELDS[version]
        // An experiment's holdout is left out like an exclusion (and counted with them) while it runs.
        const held = yield* holdouts.heldOut(profileId)
        const listed = yield* repo.payingCustomers(profileId)
        const paying = listed.map((c) => held(c.id) ? { ...c, excluded: true } : c)
        const built = build(paying, fields)
        // An audience deleted on the platform's side (404) is made again once, then filled.
        const uploadedTo = yield* onPlatform(upload(session, current, fields, built)).pipe(
          Effect.as(current),
          Effect.catchTag("AdplatformUnavailable", (e) =>
            e.provider_status === 404 && audienceId !== null
              ? Effect.flatMap(create, (fresh) => Effect.as(onPlatform(upload(session, fresh, fields, built)), fresh))
              : Effect.fail(e))
        )
        // The running holdouts record this upload as one that left their customers out.
        yield* holdouts.uploaded(profileId, listed.filter((c) => !c.excluded).map((c) => c.id), uploadedTo)
        yield* fenced(lease, repo.saveSynced(lease, {
          consentVersion: version,
          consent,
          memberCount: built.memberCount,
          excludedCount: built.excludedCount,
          skippedCount: built.skippedCount
        }))
        return before === null || before.status !== "enabled"
      })

      /** Deletes the list's lookalike and audience at the platform; an audience already gone counts as deleted. */
      const dropAudiences = Effect.fn("CustomerLists.drop")(function*(row: CustomerListRow) {
        if (row.connection_id === null) return
        const session = yield* onPlatform(sessions.session(row.connection_id))
        for (const id of [row.lookalike_id, row.platform_audience_id]) {
          if (id === null) continue
          yield* onPlatform(platform.deleteAudience(session, id).pipe(
            Effect.catchTag("ProviderRefused", (e) => (e.status === 404 ? Effect.void : Effect.fail(e)))
          ))
        }
      })

      /**
       * DELETE's platform side: the lookalike, then the audience (already gone counts). An unusable
       * connection leaves what is still there and says so; any other failure is answered (a retry finishes).
       */
      const removeAtPlatform = Effect.fn("CustomerLists.removeAtPlatform")(function*(row: CustomerListRow) {
        const connectionId = row.connection_id
        if (connectionId === null || (row.platform_audience_id === null && row.lookalike_id === null)) return null
        // What is left at the platform so far, for the answer when the connection fails midway.
        let lookalikeLeft = row.lookalike_id
        const drop = Effect.gen(function*() {
          const session = yield* sessions.session(connectionId)
          const remove = (id: string) =>
            platform.deleteAudience(session, id).pipe(
              Effect.catchTag("ProviderRefused", (e) => (e.status === 404 ? Effect.void : Effect.fail(e))),
              // The platform says the grant is dead: the connection is marked for a reconnect.
              Effect.tapError((e) => (e._tag === "ProviderAuthRevoked" ? sessions.reportAuthRevoked(connectionId) : Effect.void))
            )
          if (row.lookalike_id !== null) {
            yield* remove(row.lookalike_id)
            lookalikeLeft = null
          }
          if (row.platform_audience_id !== null) yield* remove(row.platform_audience_id)
        })
        return yield* drop.pipe(
          Effect.as<CustomerListPlatformDeletion>({ deleted: true, reason: null, platform_audience_id: row.platform_audience_id, lookalike_id: row.lookalike_id }),
          Effect.catch((e): Effect.Effect<CustomerListPlatformDeletion, DatabaseUnavailable | PlatformFailure> =>
            e._tag === "DatabaseUnavailable"
              ? Effect.fail(e)
              : connectionUnusable(e)
              ? Effect.succeed<CustomerListPlatformDeletion>({
                deleted: false,
                reason: "connection_unusable",
                platform_audience_id: row.platform_audience_id,
                lookalike_id: lookalikeLeft
              })
              : Effect.fail(fromProvider(e))
          )
        )
      })

      const proposalOf = Effect.fn("CustomerLists.proposal")(function*(profileId: string, version: CustomerListConsentVersion) {
        const fields = CUSTOMER_LIST_FIELDS[version]
        // An experiment's holdout is left out like an exclusion (and counted with them) while it runs.
        const held = yield* holdouts.heldOut(profileId)
        const paying = (yield* repo.payingCustomers(profileId)).map((c) => held(c.id) ? { ...c, excluded: true } : c)
        const built = build(paying, fields)
        return {
          proposal: true as const,
          consent_version: version,
          fields: [...fields],
          member_count: built.memberCount,
          excluded_count: built.excludedCount,
          skipped_count: built.skippedCount,
          consent: VERSIONS.map(customerListHint)
        }
      })

      const post = Effect.fn("CustomerLists.post")(function*(actor: PrincipalShape, profile: ProfileContext, body: CustomerListBody) {
        const settings = yield* gate(profile.profileId)
        if (body.confirm !== true) {
          const row = yield* repo.findList(profile.profileId)
          // A proposal shows the list's own version unless another is asked for: a v1 list stays v1 until re-confirmed.
          const version = body.consent_version ??
            Option.getOrElse(Option.flatMap(row, (r) => Option.fromNullishOr(r.status === "enabled" ? r.consent_version : null)), () => CUSTOMER_LIST_CONSENT_V2)
          return { kind: "proposal" as const, proposal: yield* proposalOf(profile.profileId, version) }
        }
        // Everyone signs, sessions included: the version decides which fields leave (decision 0100).
        const version = yield* checkListConsent(body.consent, Date.now())
        if (body.consent_version !== undefined && body.consent_version !== version) {
          return yield* unprocessable("body.consent_version: must be the version of the consent", { reason: "consent_version_mismatch" })
        }
        const connection = yield* connectionFor(profile.profileId, body.connection_id)
        if (body.ad_account_id !== undefined && body.ad_account_id !== connection.external_account_id) {
          return yield* unprocessable(`body.ad_account_id: the connection's ad account is ${connection.external_account_id ?? "unknown"}`, {
            reason: "ad_account_mismatch"
          })
        }
        const created = yield* leased(profile.profileId, (lease) => syncLocked(lease, connection, version, body.consent))
        const state = stateOf(profile.profileId, yield* repo.findList(profile.profileId), Option.none())
        yield* audit.record({
          actor,
          action: "audiences.customer_list_synced",
          targetKind: "profile",
          targetId: profile.profileId,
          profileId: profile.profileId,
          workspaceId: settings.workspace_id,
          details: {
            consent_version: version,
            platform_audience_id: state.platform_audience_id,
            member_count: state.member_count,
            excluded_count: state.excluded_count,
            skipped_count: state.skipped_count,
            created
          }
        })
        return { kind: "confirmed" as const, created, state }
      })

      const remove = Effect.fn("CustomerLists.remove")(function*(actor: PrincipalShape, profile: ProfileContext) {
        const settings = yield* settingsOf(profile.profileId)
        const row = yield* repo.findList(profile.profileId)
        // Switching off is always allowed (also while disabled or hipaa, or with its connection gone).
        let platformAudience: CustomerListPlatformDeletion | null = null
        if (Option.isSome(row) && (row.value.platform_audience_id !== null || row.value.status === "enabled")) {
          platformAudience = yield* leased(profile.profileId, (lease) =>
            Effect.gen(function*() {
              const current = yield* repo.findList(profile.profileId)
              const done = Option.isSome(current) ? yield* removeAtPlatform(current.value) : null
              // Off stops every later sync (the refresh takes enabled lists only).
              yield* fenced(lease, repo.markOff(lease))
              return done
            }))
          yield* audit.record({
            actor,
            action: "audiences.customer_list_deleted",
            targetKind: "profile",
            targetId: profile.profileId,
            profileId: profile.profileId,
            workspaceId: settings.workspace_id,
            details: {
              platform_audience_id: row.value.platform_audience_id,
              lookalike_id: row.value.lookalike_id,
              platform_deleted: platformAudience?.deleted ?? false,
              reason: platformAudience?.reason ?? null
            }
          })
        }
        return { ...stateOf(profile.profileId, yield* repo.findList(profile.profileId), blockOf(settings)), platform_audience: platformAudience }
      })

      const lookalike = Effect.fn("CustomerLists.lookalike")(function*(actor: PrincipalShape, profile: ProfileContext, countryInput: string) {
        const settings = yield* gate(profile.profileId)
        const country = countryInput.toUpperCase()
        const answerOf = (row: CustomerListRow, created: boolean): Option.Option<LookalikeAnswer> =>
          row.lookalike_id !== null && row.platform_audience_id !== null && row.lookalike_country !== null && row.lookalike_created_at !== null
            ? Option.some({
              created,
              profile_id: profile.profileId,
              source_audience_id: row.platform_audience_id,
              lookalike: { platform_audience_id: row.lookalike_id, ratio: LOOKALIKE_RATIO, country: row.lookalike_country, created_at: row.lookalike_created_at }
            })
            : Option.none()
        const off = () => new InvalidState({ message: "The customer list is off: confirm it first.", reason: "customer_list_off" })
        const row = yield* repo.findList(profile.profileId)
        if (Option.isNone(row) || row.value.status !== "enabled" || row.value.platform_audience_id === null) return yield* off()
        // One lookalike per list: a repeat answers the existing one.
        const existing = answerOf(row.value, false)
        if (Option.isSome(existing)) return existing.value
        const made = yield* leased(profile.profileId, (lease) => Effect.gen(function*() {
          const current = yield* repo.findList(profile.profileId)
          if (Option.isNone(current) || current.value.status !== "enabled" || current.value.platform_audience_id === null || current.value.connection_id === null) {
            return yield* off()
          }
          if (current.value.lookalike_id !== null) return false
          const session = yield* onPlatform(sessions.session(current.value.connection_id))
          const source = current.value.platform_audience_id
          const created = yield* platform.createLookalike(session, {
            name: `Lookalike (1%, ${country}) of paying customers`,
            origin_audience_id: source,
            ratio: LOOKALIKE_RATIO,
            country
          }).pipe(Effect.mapError((e): InvalidState | PlatformFailure =>
            e._tag === "ProviderRefused" && e.code === "lookalike_source_too_small"
              ? new InvalidState({
                message: "The ad platform needs at least 100 matched members in the customer list to build a lookalike.",
                reason: "lookalike_source_too_small"
              })
              : fromProvider(e)
          ))
          yield* fenced(lease, repo.saveLookalike(lease, created.id, country))
          return true
        }))
        const after = yield* repo.findList(profile.profileId)
        const answer = Option.flatMap(after, (r) => answerOf(r, made))
        if (Option.isNone(answer)) return yield* off()
        if (made) {
          yield* audit.record({
            actor,
            action: "audiences.lookalike_created",
            targetKind: "profile",
            targetId: profile.profileId,
            profileId: profile.profileId,
            workspaceId: settings.workspace_id,
            details: { lookalike_id: answer.value.lookalike.platform_audience_id, country, ratio: LOOKALIKE_RATIO }
          })
        }
        return answer.value
      })

      /** Whether the list is enabled and may upload now. */
      const runnable = Effect.fn("CustomerLists.runnable")(function*(profileId: string) {
        const row = yield* repo.findList(profileId)
        if (Option.isNone(row) || row.value.status !== "enabled" || row.value.connection_id === null || row.value.consent_version === null) return false
        // A list that may not run now is not uploaded to (it keeps what it had until re-enabled or deleted).
        return Option.isNone(blockOf(yield* settingsOf(profileId)))
      })

      const resyncHeld = Effect.fn("CustomerLists.resyncHeld")(function*(lease: ListLease) {
        const row = Option.getOrNull(yield* repo.findList(lease.profileId))
        if (row === null || !(yield* runnable(lease.profileId)) || row.connection_id === null || row.consent_version === null) return
        // The stored consent stays (undefined keeps it).
        yield* syncLocked(lease, { id: row.connection_id, external_account_id: row.ad_account_id }, row.consent_version, undefined)
      })

      const resync = Effect.fn("CustomerLists.resync")(function*(profileId: string) {
        if (!(yield* runnable(profileId))) return
        yield* leased(profileId, resyncHeld)
      })

      return { get, post, remove, lookalike, resync, resyncHeld }
    })
  ).pipe(Layer.provide([AudiencesRepo.layer, CatalogRepo.layer, AdConnections.layer, ConnectionSessions.layer, AuditLog.layer]))
}

/** Audiences (decision 0099): customers a profile keeps out of every audience. */
export class Audiences extends Context.Service<Audiences, {
  readonly setExclusions: (
    profile: ProfileContext,
    pathProfileId: string,
    customerIds: ReadonlyArray<string>
  ) => Effect.Effect<
    { readonly profile_id: string; readonly customer_ids: ReadonlyArray<string> },
    NotFound | UnknownCustomerRef | InvalidState | DatabaseUnavailable | PlatformFailure
  >
}>()("svc/Audiences") {
  static readonly layer = Layer.effect(Audiences)(
    Effect.gen(function*() {
      const repo = yield* AudiencesRepo
      const lists = yield* CustomerLists
      const setExclusions = Effect.fn("Audiences.setExclusions")(function*(
        profile: ProfileContext,
        pathProfileId: string,
        customerIds: ReadonlyArray<string>
      ) {
        // The caller acts on its own profile only; any other id answers as unknown.
        if (pathProfileId !== profile.profileId) {
          return yield* new NotFound({ message: "Unknown profile." })
        }
        const unique = [...new Set(customerIds)]
        const live = new Set(yield* repo.liveCustomers(profile.profileId, unique))
        const unknown = unique.filter((id) => !live.has(id))
        if (unknown.length > 0) {
          return yield* new UnknownCustomerRef({ message: `Unknown customer ids: ${unknown.slice(0, 10).join(", ")}.` })
        }
        const ids = yield* repo.replaceExclusions(profile.profileId, unique)
        // An enabled customer list is re-uploaded at once (decision 0100); a failure here is answered, and the
        // same PUT again (a no-op for the set) retries the upload.
        yield* lists.resync(profile.profileId)
        return { profile_id: profile.profileId, customer_ids: ids }
      })
      return { setExclusions }
    })
  ).pipe(Layer.provide([AudiencesRepo.layer, CustomerLists.layer]))
}
