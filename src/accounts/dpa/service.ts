/**
 * The DPA status table (decision 0024).
 *
 * App level: the owner or admin of an OAuth app's owner workspace accepts the DPA in the
 * console (session only); every profile the app provisioned, and every later one, then reads
 * `accepted` with that version and acceptor. Withdrawal returns those inherited profiles to
 * `withdrawn`. Profile level: a profile's own owner or admin accepts its own DPA (kept whatever
 * the app does) and its BAA. Inheritance is computed at read time, never copied. Exports are
 * held until the privacy mode's agreement is accepted (`exportHold`).
 */
import { Context, Effect, Layer, Option } from "effect"
import { isUuid } from "../../../schema/common.ts"
import {
  type AcceptAgreement,
  type AgreementStatus,
  type AppDpa,
  CURRENT_BAA_VERSION,
  CURRENT_DPA_VERSION,
  type ExportHold,
  type ProfileAgreements
} from "../../../schema/dpa.ts"
import {
  type DatabaseUnavailable,
  InsufficientScope,
  InvalidState,
  NotFound,
  ValidationError
} from "../../../schema/errors.ts"
import type { WorkspaceRole } from "../../../schema/members.ts"
import { AdminRepo } from "../admin/repo.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import type { PrincipalShape } from "../../kernel/principal.ts"
import { TenancyRepo } from "../profiles/repo.ts"
import { type Agreement, type AppDpaRow, DpaRepo, type ProfileAgreementRow } from "./repo.ts"

type SessionPrincipal = Extract<PrincipalShape, { readonly kind: "session" }>

const noSuchApp = () => new NotFound({ message: "No such OAuth app." })
const noSuchProfile = () => new NotFound({ message: "No such profile." })
const sessionOnly = () =>
  new InsufficientScope({
    message: "Only a person signed in to the console accepts or withdraws an agreement.",
    reason: "credential_kind_not_accepted"
  })

/** Roles that accept and withdraw agreements for a workspace. */
const MANAGERS: ReadonlyArray<WorkspaceRole> = ["owner", "admin"]

const currentVersionOf: Record<Agreement, string> = { dpa: CURRENT_DPA_VERSION, baa: CURRENT_BAA_VERSION }
const nameOf: Record<Agreement, string> = { dpa: "DPA", baa: "BAA" }

/** One agreement's stored state. */
interface Stored {
  readonly status: AgreementStatus
  readonly version: string | null
}

/** What the table does with a request: write, or answer `changed: false`. */
type Move = "write" | "unchanged"

/**
 * `not_accepted` or `withdrawn` → `accepted`; `accepted` under an older version → accepted
 * under the current one; `accepted` under the current version → unchanged. Another version: 400.
 */
const acceptMove = (agreement: Agreement, stored: Stored, version: string): Effect.Effect<Move, ValidationError> => {
  const current = currentVersionOf[agreement]
  if (version !== current) {
    return Effect.fail(
      new ValidationError({
        message: `body.version: expected the current ${nameOf[agreement]} version ${current}`,
        reason: `${agreement}_version_mismatch`
      })
    )
  }
  return Effect.succeed(stored.status === "accepted" && stored.version === current ? "unchanged" : "write")
}

/** `accepted` → `withdrawn`; `withdrawn` → unchanged; `not_accepted` has nothing to withdraw: 409. */
const withdrawMove = (agreement: Agreement, stored: Stored, hint = ""): Effect.Effect<Move, InvalidState> => {
  switch (stored.status) {
    case "accepted":
      return Effect.succeed("write")
    case "withdrawn":
      return Effect.succeed("unchanged")
    case "not_accepted":
      return Effect.fail(
        new InvalidState({
          message: `The ${nameOf[agreement]} was never accepted here; there is nothing to withdraw.${hint}`,
          reason: `${agreement}_not_accepted`
        })
      )
  }
}

const renderApp = (row: AppDpaRow): AppDpa => ({
  app_id: row.id,
  owner_workspace_id: row.owner_workspace_id,
  dpa_status: row.dpa_status,
  dpa_version: row.dpa_version,
  dpa_accepted_at: row.dpa_accepted_at,
  dpa_accepted_by: row.dpa_accepted_by,
  current_version: CURRENT_DPA_VERSION
})

/**
 * The effective DPA of a profile: its own acceptance when its owner accepted; otherwise the
 * provisioning app's once that app accepted (or withdrew); otherwise its own withdrawal; else
 * nothing was ever accepted.
 */
export const effectiveDpa = (row: ProfileAgreementRow) => {
  const own = {
    status: row.own_dpa_status,
    version: row.own_dpa_version,
    accepted_at: row.own_dpa_accepted_at,
    accepted_by: row.own_dpa_accepted_by
  }
  if (row.own_dpa_status === "accepted") return { ...own, source: "profile" as const }
  if (row.app_dpa_status === "accepted" || row.app_dpa_status === "withdrawn") {
    return {
      status: row.app_dpa_status,
      version: row.app_dpa_version,
      accepted_at: row.app_dpa_accepted_at,
      accepted_by: row.app_dpa_accepted_by,
      source: "app" as const
    }
  }
  if (row.own_dpa_status === "withdrawn") return { ...own, source: "profile" as const }
  return { status: "not_accepted" as const, version: null, accepted_at: null, accepted_by: null, source: "none" as const }
}

/** S-rule of the DPA table: `platform_safe` needs an accepted DPA, `hipaa` an accepted BAA; other modes nothing. */
export const holdOf = (row: ProfileAgreementRow): Option.Option<ExportHold> => {
  if (row.privacy_mode === "platform_safe" && effectiveDpa(row).status !== "accepted") return Option.some("dpa_not_accepted")
  if (row.privacy_mode === "hipaa" && row.baa_status !== "accepted") return Option.some("baa_not_accepted")
  return Option.none()
}

const renderProfile = (row: ProfileAgreementRow): ProfileAgreements => {
  const dpa = effectiveDpa(row)
  return {
    profile_id: row.profile_id,
    workspace_id: row.workspace_id,
    privacy_mode: row.privacy_mode,
    dpa_status: dpa.status,
    dpa_version: dpa.version,
    dpa_accepted_at: dpa.accepted_at,
    dpa_accepted_by: dpa.accepted_by,
    dpa_source: dpa.source,
    provisioned_by_app_id: row.provisioned_by_app_id,
    own_dpa: {
      status: row.own_dpa_status,
      version: row.own_dpa_version,
      accepted_at: row.own_dpa_accepted_at,
      accepted_by: row.own_dpa_accepted_by
    },
    baa_status: row.baa_status,
    baa_version: row.baa_version,
    baa_accepted_at: row.baa_accepted_at,
    baa_accepted_by: row.baa_accepted_by,
    current_dpa_version: CURRENT_DPA_VERSION,
    current_baa_version: CURRENT_BAA_VERSION,
    export_hold: Option.getOrNull(holdOf(row))
  }
}

type Fails<A, E> = Effect.Effect<A, E | DatabaseUnavailable>
type Changed<A> = A & { readonly changed: boolean }

export class DpaService extends Context.Service<DpaService, {
  /** The app's DPA, for the owner or admin of its owner workspace (anyone else: 404). */
  readonly appDpa: (actor: PrincipalShape, appId: string) => Fails<AppDpa, NotFound | InsufficientScope>
  readonly acceptAppDpa: (
    actor: PrincipalShape,
    appId: string,
    input: AcceptAgreement
  ) => Fails<Changed<AppDpa>, NotFound | InsufficientScope | ValidationError>
  readonly withdrawAppDpa: (actor: PrincipalShape, appId: string) => Fails<Changed<AppDpa>, NotFound | InsufficientScope | InvalidState>
  /** A profile's agreements: for a member session, an API key of the profile, or the provisioning app. */
  readonly profileAgreements: (actor: PrincipalShape, profileId: string) => Fails<ProfileAgreements, NotFound>
  readonly acceptProfile: (
    actor: PrincipalShape,
    profileId: string,
    agreement: Agreement,
    input: AcceptAgreement
  ) => Fails<Changed<ProfileAgreements>, NotFound | InsufficientScope | ValidationError>
  readonly withdrawProfile: (
    actor: PrincipalShape,
    profileId: string,
    agreement: Agreement
  ) => Fails<Changed<ProfileAgreements>, NotFound | InsufficientScope | InvalidState>
  /** Why exports of the profile are held under its privacy mode; None when they may run. */
  readonly exportHold: (profileId: string) => Fails<Option.Option<ExportHold>, NotFound>
}>()("svc/DpaService") {
  static readonly layer = Layer.effect(DpaService)(
    Effect.gen(function*() {
      const repo = yield* DpaRepo
      const admin = yield* AdminRepo
      const profiles = yield* TenancyRepo
      const audit = yield* AuditLog

      const inTransaction = repo.transaction

      const asSession = (actor: PrincipalShape): Effect.Effect<SessionPrincipal, InsufficientScope> =>
        actor.kind === "session" ? Effect.succeed(actor) : Effect.fail(sessionOnly())

      /** The app, if the person is owner or admin of its live owner workspace; otherwise one 404. */
      const reachApp = Effect.fn("DpaService.reachApp")(function*(session: SessionPrincipal, rawAppId: string, lock: boolean) {
        if (!isUuid(rawAppId)) return yield* noSuchApp()
        const row = yield* repo.findApp(rawAppId.toLowerCase(), session.userId, lock)
        if (Option.isNone(row) || row.value.role === null || !MANAGERS.includes(row.value.role)) return yield* noSuchApp()
        return row.value
      })

      const rereadApp = (session: SessionPrincipal, appId: string) =>
        Effect.flatMap(repo.findApp(appId, session.userId, false), Option.match({
          onNone: () => Effect.die("the app vanished inside its transaction"),
          onSome: Effect.succeed
        }))

      const appDpa = Effect.fn("DpaService.appDpa")(function*(actor: PrincipalShape, appId: string) {
        return renderApp(yield* reachApp(yield* asSession(actor), appId, false))
      })

      const acceptAppDpa = Effect.fn("DpaService.acceptAppDpa")(function*(
        actor: PrincipalShape,
        appId: string,
        input: AcceptAgreement
      ) {
        const session = yield* asSession(actor)
        return yield* inTransaction(Effect.gen(function*() {
          const row = yield* reachApp(session, appId, true)
          const move = yield* acceptMove("dpa", { status: row.dpa_status, version: row.dpa_version }, input.version)
          if (move === "unchanged") return { ...renderApp(row), changed: false }
          yield* admin.acceptDpa(row.id, input.version, session.userId)
          yield* audit.record({
            actor: session,
            action: "dpa.accepted",
            targetKind: "oauth_app",
            targetId: row.id,
            workspaceId: row.owner_workspace_id,
            details: { level: "app", version: input.version, from: row.dpa_status }
          })
          return { ...renderApp(yield* rereadApp(session, row.id)), changed: true }
        }))
      })

      const withdrawAppDpa = Effect.fn("DpaService.withdrawAppDpa")(function*(actor: PrincipalShape, appId: string) {
        const session = yield* asSession(actor)
        return yield* inTransaction(Effect.gen(function*() {
          const row = yield* reachApp(session, appId, true)
          const move = yield* withdrawMove("dpa", { status: row.dpa_status, version: row.dpa_version })
          if (move === "unchanged") return { ...renderApp(row), changed: false }
          yield* admin.withdrawDpa(row.id)
          yield* audit.record({
            actor: session,
            action: "dpa.withdrawn",
            targetKind: "oauth_app",
            targetId: row.id,
            workspaceId: row.owner_workspace_id,
            details: { level: "app", version: row.dpa_version }
          })
          return { ...renderApp(yield* rereadApp(session, row.id)), changed: true }
        }))
      })

      /** A live profile of a live workspace, or the one 404 (malformed, unknown, archived). */
      const liveProfile = Effect.fn("DpaService.liveProfile")(function*(rawProfileId: string, lock: boolean) {
        if (!isUuid(rawProfileId)) return yield* noSuchProfile()
        const row = yield* repo.findProfile(rawProfileId.toLowerCase(), lock)
        if (Option.isNone(row) || row.value.archived) return yield* noSuchProfile()
        return row.value
      })

      /** Who may read: a member who reaches the profile, an API key of it, the app that provisioned it. */
      const mayRead = Effect.fn("DpaService.mayRead")(function*(actor: PrincipalShape, row: ProfileAgreementRow) {
        switch (actor.kind) {
          case "api_key":
            return actor.profileId === row.profile_id
          case "app_client":
            return row.provisioned_by_app_id === actor.appId
          case "session": {
            const standing = yield* repo.standing(row.workspace_id, row.profile_id, actor.userId)
            return Option.isSome(standing) && (standing.value.role !== "guest" || standing.value.profile_member)
          }
          default:
            return false
        }
      })

      const profileAgreements = Effect.fn("DpaService.profileAgreements")(function*(actor: PrincipalShape, profileId: string) {
        const row = yield* liveProfile(profileId, false)
        if (!(yield* mayRead(actor, row))) return yield* noSuchProfile()
        return renderProfile(row)
      })

      /**
       * The locked profile, for an owner or admin of its workspace. Someone who cannot reach it
       * gets the 404; a member who reaches it with a lower role gets 403 (reason `workspace_role`).
       */
      const manageProfile = Effect.fn("DpaService.manageProfile")(function*(session: SessionPrincipal, profileId: string) {
        const row = yield* liveProfile(profileId, true)
        const standing = yield* repo.standing(row.workspace_id, row.profile_id, session.userId)
        if (Option.isNone(standing) || (standing.value.role === "guest" && !standing.value.profile_member)) {
          return yield* noSuchProfile()
        }
        if (!MANAGERS.includes(standing.value.role)) {
          return yield* new InsufficientScope({
            message: "Only an owner or admin of the profile's workspace accepts or withdraws its agreements.",
            reason: "workspace_role"
          })
        }
        return row
      })

      const rereadProfile = (profileId: string) =>
        Effect.flatMap(repo.findProfile(profileId, false), Option.match({
          onNone: () => Effect.die("the profile vanished inside its transaction"),
          onSome: Effect.succeed
        }))

      const storedOf = (row: ProfileAgreementRow, agreement: Agreement): Stored =>
        agreement === "dpa"
          ? { status: row.own_dpa_status, version: row.own_dpa_version }
          : { status: row.baa_status, version: row.baa_version }

      const acceptProfile = Effect.fn("DpaService.acceptProfile")(function*(
        actor: PrincipalShape,
        profileId: string,
        agreement: Agreement,
        input: AcceptAgreement
      ) {
        const session = yield* asSession(actor)
        return yield* inTransaction(Effect.gen(function*() {
          const row = yield* manageProfile(session, profileId)
          const stored = storedOf(row, agreement)
          const move = yield* acceptMove(agreement, stored, input.version)
          if (move === "unchanged") return { ...renderProfile(row), changed: false }
          yield* profiles.acceptAgreement(row.profile_id, agreement, input.version, session.userId)
          yield* audit.record({
            actor: session,
            action: `${agreement}.accepted`,
            targetKind: "profile",
            targetId: row.profile_id,
            profileId: row.profile_id,
            workspaceId: row.workspace_id,
            details: { level: "profile", version: input.version, from: stored.status }
          })
          return { ...renderProfile(yield* rereadProfile(row.profile_id)), changed: true }
        }))
      })

      const withdrawProfile = Effect.fn("DpaService.withdrawProfile")(function*(
        actor: PrincipalShape,
        profileId: string,
        agreement: Agreement
      ) {
        const session = yield* asSession(actor)
        return yield* inTransaction(Effect.gen(function*() {
          const row = yield* manageProfile(session, profileId)
          const stored = storedOf(row, agreement)
          const inherited = agreement === "dpa" && effectiveDpa(row).source === "app"
          const move = yield* withdrawMove(
            agreement,
            stored,
            inherited ? " The DPA this profile reads is its provisioning app's; the app's owner workspace withdraws it." : ""
          )
          if (move === "unchanged") return { ...renderProfile(row), changed: false }
          yield* profiles.withdrawAgreement(row.profile_id, agreement)
          yield* audit.record({
            actor: session,
            action: `${agreement}.withdrawn`,
            targetKind: "profile",
            targetId: row.profile_id,
            profileId: row.profile_id,
            workspaceId: row.workspace_id,
            details: { level: "profile", version: stored.version }
          })
          return { ...renderProfile(yield* rereadProfile(row.profile_id)), changed: true }
        }))
      })

      const exportHold = Effect.fn("DpaService.exportHold")(function*(profileId: string) {
        if (!isUuid(profileId)) return yield* noSuchProfile()
        const row = yield* repo.findProfile(profileId.toLowerCase(), false)
        if (Option.isNone(row)) return yield* noSuchProfile()
        return holdOf(row.value)
      })

      return { appDpa, acceptAppDpa, withdrawAppDpa, profileAgreements, acceptProfile, withdrawProfile, exportHold }
    })
  ).pipe(Layer.provide([DpaRepo.layer, AdminRepo.layer, TenancyRepo.layer, AuditLog.layer]))
}
