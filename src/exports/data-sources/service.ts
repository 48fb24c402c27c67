/**
 * Data-source datasets (issue 20 part 4; api-endpoints.md "Conversion sync and Platform-Safe";
 * decision 0091): the business chat account's dataset (created), the website pixel (one of the
 * ad account's existing pixels, never created) and the social DM account's dataset, each wired
 * as a Conversions API destination. The source's own connection is checked before any
 * ad-platform call (409 `chat_app_a_connection_required`, `social_dm_connection_required`,
 * `social_dm_login_required`).
 */
import { Context, Effect, Layer, Option } from "effect"
import {
  AdplatformConnectionRequired,
  AdplatformWritePermissionMissing,
  ChatAppAConnectionRequired,
  type DatabaseUnavailable,
  InvalidState,
  SocialDmConnectionRequired,
  SocialDmLoginRequired,
  unprocessable,
  type ValidationError
} from "../../../schema/errors.ts"
import type { DataSource, EnsureBody, EnsureWebsiteBody } from "../../../schema/platform-safe.ts"
import { AdConnections } from "../../ads/actions/connections.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { AdPlatform } from "../../connections/providers/adplatform/port.ts"
import { SocialDm } from "../../connections/providers/messaging/port.ts"
import { DestinationsRepo } from "../destinations/repo.ts"
import { onPlatform, type PlatformFailure } from "../platform-safe/service.ts"
import { DataSourcesRepo, type SourceRow } from "./repo.ts"

const MANAGE_ADS = "ads_management"

export interface Ensured {
  readonly source: DataSource
  readonly account_id: string
  readonly dataset_id: string
  readonly destination_id: string
  readonly selectable_pixels: ReadonlyArray<{ readonly id: string; readonly name: string }>
  readonly created: boolean
}

const SOURCES = [
  { source: "whatsapp", provider: "chat_app_a", action: "create_dataset" },
  { source: "website", provider: "adplatform", action: "attach_pixel" },
  { source: "instagram", provider: "social_dm", action: "create_dataset" }
] as const

export interface SourceView {
  readonly source: DataSource
  readonly provider: string
  readonly connected: boolean
  readonly wired: boolean
  readonly dataset_id: string | null
  readonly destination_id: string | null
  readonly blockers: ReadonlyArray<string>
  readonly export_preview_30d: { readonly outcomes: number }
  readonly shared_with_profiles: ReadonlyArray<string>
  readonly warning: "meta_destination_shared" | null
}

export interface SourceOption {
  readonly source: DataSource
  readonly provider: string
  readonly connected: boolean
  readonly ensure_path: string
  readonly action: "create_dataset" | "attach_pixel"
}

type Failure = PlatformFailure | InvalidState | ValidationError | DatabaseUnavailable

export class DataSources extends Context.Service<DataSources, {
  readonly ensureWhatsapp: (profile: ProfileContext, body: EnsureBody) => Effect.Effect<Ensured, Failure | ChatAppAConnectionRequired>
  readonly ensureWebsite: (profile: ProfileContext, body: EnsureWebsiteBody) => Effect.Effect<Ensured, Failure>
  readonly ensureInstagram: (
    profile: ProfileContext,
    body: EnsureBody
  ) => Effect.Effect<Ensured, Failure | SocialDmConnectionRequired | SocialDmLoginRequired>
  readonly list: (profile: ProfileContext) => Effect.Effect<ReadonlyArray<SourceView>, DatabaseUnavailable>
  readonly options: (profile: ProfileContext) => Effect.Effect<ReadonlyArray<SourceOption>, DatabaseUnavailable>
}>()("svc/DataSources") {
  static readonly layer = Layer.effect(DataSources)(
    Effect.gen(function*() {
      const repo = yield* DataSourcesRepo
      const adConnections = yield* AdConnections
      const destinations = yield* DestinationsRepo
      const sessions = yield* ConnectionSessions
      const platform = yield* AdPlatform
      const socialDm = yield* SocialDm


      /** The source's own live connection (not awaiting a reconnect), if any. */
      const sourceConnection = (profileId: string, provider: string) =>
        Effect.map(sessions.currentOf(profileId, provider), (found) =>
          Option.filter(found, (c) => c.status !== "reconnect_required" && c.external_account_id !== null))

      /** The one usable ad-platform connection holding the manage-ads grant. */
      const adConnection = Effect.fn("DataSources.adConnection")(function*(profileId: string) {
        const all = yield* adConnections.of(profileId)
        const usable = all.filter((c) => c.status !== "reconnect_required" && c.external_account_id !== null)
        const only = usable.length === 1 ? usable[0] : undefined
        if (only === undefined) {
          return yield* new AdplatformConnectionRequired({
            message: usable.length === 0 ? "The profile has no usable ad-platform connection." : "The profile has several ad-platform connections.",
            reason: usable.length === 0 ? "no_usable_connection" : "several_connections"
          })
        }
        return only
      })

      /** Wires the dataset as a destination (once; a retry finds the row and the destination). */
      const wire = Effect.fn("DataSources.wire")(function*(
        profileId: string,
        connectionId: string,
        row: SourceRow,
        kind: "adplatform_capi" | "adplatform_capi_messaging",
        name: string
      ) {
        if (row.destination_id !== null) return row.destination_id
        const id = crypto.randomUUID()
        const inserted = yield* destinations.insert({ id, profileId, kind, connectionId, datasetId: row.dataset_id, name, cleanDataset: false })
        const destinationId = inserted ? id : Option.getOrElse(yield* destinations.conflicting(profileId, kind, row.dataset_id, null), () => id)
        yield* repo.setDestination(profileId, row.source, destinationId)
        return destinationId
      })

      /** Creates the source's dataset unless recorded, wires it; `created` says whether this call did. */
      const ensureCreated = Effect.fn("DataSources.ensureCreated")(function*(
        profileId: string,
        source: "whatsapp" | "instagram",
        accountId: string,
        name: string
      ) {
        const existing = yield* repo.find(profileId, source)
        const connection = yield* adConnection(profileId)
        if (Option.isSome(existing) && existing.value.destination_id !== null) {
          return { row: existing.value, destinationId: existing.value.destination_id, created: false }
        }
        if (!connection.scopes.includes(MANAGE_ADS)) {
          return yield* new AdplatformWritePermissionMissing({ message: "The ad-platform connection lacks the manage-advertisements grant.", reconnect_required: true })
        }
        let row: SourceRow
        if (Option.isSome(existing)) {
          row = existing.value
        } else {
          const session = yield* onPlatform(sessions.session(connection.id))
          const dataset = yield* onPlatform(platform.createDataset(session, name))
          const saved = yield* repo.save(profileId, { source, account_id: accountId, dataset_id: dataset.id, destination_id: null })
          if (Option.isNone(saved)) return yield* Effect.die("the data source row vanished after its insert")
          row = saved.value
        }
        const destinationId = yield* wire(profileId, connection.id, row, "adplatform_capi_messaging", name)
        return { row, destinationId, created: true }
      })

      const ensureWhatsapp = Effect.fn("DataSources.ensureWhatsapp")(function*(profile: ProfileContext, body: EnsureBody) {
        const chat = yield* sourceConnection(profile.profileId, "chat_app_a")
        if (Option.isNone(chat)) {
          return yield* new ChatAppAConnectionRequired({ message: "Connect the business chat account first (chat_app_a)." })
        }
        const accountId = chat.value.external_account_id ?? ""
        const done = yield* ensureCreated(profile.profileId, "whatsapp", accountId, body.dataset_name ?? `Business chat ${accountId}`)
        return { source: "whatsapp" as const, account_id: done.row.account_id, dataset_id: done.row.dataset_id, destination_id: done.destinationId, selectable_pixels: [], created: done.created }
      })

      const ensureInstagram = Effect.fn("DataSources.ensureInstagram")(function*(profile: ProfileContext, body: EnsureBody) {
        const social = yield* sourceConnection(profile.profileId, "social_dm")
        if (Option.isNone(social)) {
          return yield* new SocialDmConnectionRequired({ message: "Connect the social direct-message account first (social_dm)." })
        }
        // The login type is read from the social platform, before any ad-platform call.
        const session = yield* onPlatform(sessions.session(social.value.id))
        const account = yield* onPlatform(socialDm.account(session))
        if (account.login_type !== "business_login") {
          return yield* new SocialDmLoginRequired({
            message: `The social account is connected through ${account.login_type ?? "an unknown login"}; reconnect it with the business login.`,
            reason: "business_login_required"
          })
        }
        const done = yield* ensureCreated(profile.profileId, "instagram", account.id, body.dataset_name ?? `Social DM ${account.id}`)
        return { source: "instagram" as const, account_id: done.row.account_id, dataset_id: done.row.dataset_id, destination_id: done.destinationId, selectable_pixels: [], created: done.created }
      })

      const ensureWebsite = Effect.fn("DataSources.ensureWebsite")(function*(profile: ProfileContext, body: EnsureWebsiteBody) {
        const connection = yield* adConnection(profile.profileId)
        const session = yield* onPlatform(sessions.session(connection.id))
        const pixels = yield* onPlatform(platform.pixels(session))
        const selectable = pixels.map((p) => ({ id: p.id, name: p.name }))
        const existing = yield* repo.find(profile.profileId, "website")
        if (Option.isSome(existing) && existing.value.destination_id !== null && (body.pixel_id === undefined || body.pixel_id === existing.value.dataset_id)) {
          return { source: "website" as const, account_id: existing.value.account_id, dataset_id: existing.value.dataset_id, destination_id: existing.value.destination_id, selectable_pixels: selectable, created: false }
        }
        if (Option.isSome(existing) && body.pixel_id !== undefined && body.pixel_id !== existing.value.dataset_id) {
          return yield* new InvalidState({ message: `The website is already wired to pixel ${existing.value.dataset_id}.`, reason: "website_pixel_attached" })
        }
        // Never creates a pixel: one of the account's existing ones is attached.
        const chosen = body.pixel_id === undefined ? (selectable.length === 1 ? selectable[0] : undefined) : selectable.find((p) => p.id === body.pixel_id)
        if (chosen === undefined) {
          if (body.pixel_id !== undefined) return yield* unprocessable(`body.pixel_id: not a pixel of the ad account (${selectable.map((p) => p.id).join(", ")})`, { reason: "unknown_pixel" })
          return yield* new InvalidState({
            message: selectable.length === 0
              ? "The ad account has no pixel: create one on the ad platform, then call again."
              : `Choose one of the ad account's pixels with pixel_id: ${selectable.map((p) => p.id).join(", ")}.`,
            reason: selectable.length === 0 ? "no_pixel" : "pixel_selection_required"
          })
        }
        const saved = yield* repo.save(profile.profileId, { source: "website", account_id: chosen.id, dataset_id: chosen.id, destination_id: null })
        if (Option.isNone(saved)) return yield* Effect.die("the data source row vanished after its insert")
        const destinationId = yield* wire(profile.profileId, connection.id, saved.value, "adplatform_capi", `Website ${chosen.name}`)
        return { source: "website" as const, account_id: chosen.id, dataset_id: chosen.id, destination_id: destinationId, selectable_pixels: selectable, created: true }
      })

      const connectedTo = (profileId: string, provider: string) => Effect.map(sourceConnection(profileId, provider), Option.isSome)

      const list = Effect.fn("DataSources.list")(function*(profile: ProfileContext) {
        const stored = yield* repo.all(profile.profileId)
        const adConnected = yield* connectedTo(profile.profileId, "adplatform")
        const views: Array<SourceView> = []
        for (const { source, provider } of SOURCES) {
          const row = stored.find((r) => r.source === source)
          const connected = yield* connectedTo(profile.profileId, provider)
          const blockers = [
            ...(adConnected ? [] : ["adplatform_connection_required"]),
            ...(connected || provider === "adplatform" ? [] : [provider === "chat_app_a" ? "chat_app_a_connection_required" : "social_dm_connection_required"])
          ]
          const destinationId = row?.destination_id ?? null
          const share = row === undefined ? { sameWorkspace: [], any: false } : yield* repo.sharing(profile.profileId, row.dataset_id)
          views.push({
            source,
            provider,
            connected,
            wired: destinationId !== null,
            dataset_id: row?.dataset_id ?? null,
            destination_id: destinationId,
            blockers,
            export_preview_30d: { outcomes: destinationId === null ? 0 : yield* repo.preview30d(profile.profileId, destinationId) },
            shared_with_profiles: share.sameWorkspace,
            warning: share.any ? "meta_destination_shared" : null
          })
        }
        return views
      })

      const options = Effect.fn("DataSources.options")(function*(profile: ProfileContext) {
        const out: Array<SourceOption> = []
        for (const { source, provider, action } of SOURCES) {
          out.push({
            source,
            provider,
            connected: yield* connectedTo(profile.profileId, provider),
            ensure_path: `/api/v1/conversion-sync/data-sources/${source}/ensure`,
            action
          })
        }
        return out
      })

      return { ensureWhatsapp, ensureWebsite, ensureInstagram, list, options }
    })
  ).pipe(Layer.provide([DataSourcesRepo.layer, AdConnections.layer, DestinationsRepo.layer, ConnectionSessions.layer]))
}
