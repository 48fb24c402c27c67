/**
 * The business chat account's message templates and their analytics (decision 0093), live through
 * the `chat_app_a` port on the profile's connection. Analytics: a range of at most 90 UTC days;
 * the first call on an account with insights off switches them on and answers 409
 * `insights_enabling` with `retry_after_seconds`; an account that refuses the switch is 422
 * `insights_unsupported`; an unknown template name is 404 `template_not_found`. A complete answer
 * is kept 15 minutes per (connection, template, language, range) in this process.
 */
import { Context, Effect, Layer, Option, Stream } from "effect"
import type { CreateTemplateBody, TemplateAnalyticsQuery, TemplatesQuery } from "../../../schema/chat-surfaces.ts"
import {
  ChatAppAConnectionRequired,
  type DatabaseUnavailable,
  InsightsEnabling,
  InsightsUnsupported,
  InvalidContent,
  InvalidDateRange,
  NotFound,
  PayloadTooLarge,
  TemplateNotFound,
  ValidationError
} from "../../../schema/errors.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { type LiveCallError, liveCaller } from "../../connections/live-call.ts"
import { type ConnectionRecord, ConnectionSessions } from "../../connections/sessions.ts"
import type { ProviderRefused } from "../../connections/providers/errors.ts"
import { ProviderEndpoints } from "../../connections/providers/endpoints.ts"
import { AppConfig } from "../../platform/config.ts"
import { checkMedia } from "./media.ts"
import { ChatAppA, type MessageTemplate, type TemplateAnalyticsDay } from "../../connections/providers/chat-app-a/port.ts"

const PROVIDER = "chat_app_a"
export const MAX_RANGE_DAYS = 90
export const CACHE_SECONDS = 15 * 60
/** Cached answers kept at most; the oldest go first. */
const CACHE_ENTRIES = 1_000
/** Templates a list answers at most (accounts hold far fewer). */
const MAX_TEMPLATES = 500
const DAY_MS = 86_400_000
const DEFAULT_DAYS = 30

const renderTemplate = (t: MessageTemplate) => ({ id: t.id, name: t.name, language: t.language, status: t.status, category: t.category })

interface Figures {
  readonly sent: number
  readonly delivered: number
  readonly read: number
  readonly button_clicks: number
  readonly cost_minor: number
}

const ZERO: Figures = { sent: 0, delivered: 0, read: 0, button_clicks: 0, cost_minor: 0 }

const add = (a: Figures, b: Figures): Figures => ({
  sent: a.sent + b.sent,
  delivered: a.delivered + b.delivered,
  read: a.read + b.read,
  button_clicks: a.button_clicks + b.button_clicks,
  cost_minor: a.cost_minor + b.cost_minor
})

const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/** The range asked for, defaulted and checked: `start..end` inclusive, at most 90 UTC days. */
export const rangeOf = (query: TemplateAnalyticsQuery, nowMs: number): Effect.Effect<{ readonly start: string; readonly end: string }, InvalidDateRange> => {
  const end = query.end ?? utcDay(nowMs)
  const start = query.start ?? utcDay(Date.parse(end) - (DEFAULT_DAYS - 1) * DAY_MS)
  if (start > end) return Effect.fail(new InvalidDateRange({ message: `start (${start}) is after end (${end}).` }))
  const days = (Date.parse(end) - Date.parse(start)) / DAY_MS + 1
  if (days > MAX_RANGE_DAYS) {
    return Effect.fail(new InvalidDateRange({ message: `The range is ${days} days; template analytics answer at most ${MAX_RANGE_DAYS}.` }))
  }
  return Effect.succeed({ start, end })
}

/** Totals and one entry per UTC day of the range (days without figures are zero). */
export const series = (rows: ReadonlyArray<TemplateAnalyticsDay>, start: string, end: string) => {
  const byDay = new Map<string, Figures>()
  for (const row of rows) byDay.set(row.date, add(byDay.get(row.date) ?? ZERO, row))
  const daily: Array<Figures & { readonly date: string }> = []
  for (let day = Date.parse(start); day <= Date.parse(end); day += DAY_MS) {
    const date = utcDay(day)
    daily.push({ date, ...(byDay.get(date) ?? ZERO) })
  }
  const totals = daily.reduce<Figures>((sum, day) => add(sum, day), ZERO)
  return { totals, daily, currency: rows[0]?.currency ?? null }
}

export type TemplatesError = LiveCallError | ChatAppAConnectionRequired | DatabaseUnavailable

type Analytics = ReturnType<typeof series> & {
  readonly template: { readonly name: string; readonly languages: ReadonlyArray<string>; readonly template_ids: ReadonlyArray<string> }
  readonly connection_id: string
  readonly start: string
  readonly end: string
  readonly fetched_at: string
}

export class ChatTemplates extends Context.Service<ChatTemplates, {
  readonly list: (profile: ProfileContext, query: TemplatesQuery) => Effect.Effect<ReadonlyArray<ReturnType<typeof renderTemplate>>, TemplatesError>
  /**
   * A new template (`PENDING` at the platform). `header_media` is fetched first: a wrong type or an
   * unreachable URL is 422 `invalid_content`, over the format's size 413 `payload_too_large`.
   */
  readonly create: (
    profile: ProfileContext,
    body: CreateTemplateBody
  ) => Effect.Effect<ReturnType<typeof renderTemplate>, TemplatesError | ValidationError | InvalidContent | PayloadTooLarge>
  readonly analytics: (
    profile: ProfileContext,
    name: string,
    query: TemplateAnalyticsQuery
  ) => Effect.Effect<Analytics, TemplatesError | InvalidDateRange | TemplateNotFound | InsightsEnabling | InsightsUnsupported>
}>()("svc/ChatTemplates") {
  static readonly layer = Layer.effect(ChatTemplates)(
    Effect.gen(function*() {
      const connections = yield* ConnectionSessions
      const onConnection = yield* liveCaller
      const chat = yield* ChatAppA
      const cache = new Map<string, { readonly at: number; readonly value: Analytics }>()
      const endpoints = yield* ProviderEndpoints
      const settings = yield* AppConfig
      // A sandbox served alone (`SVC_SANDBOX_URL`) is the one private origin a media fetch may reach
      // (its test media); this service's own origin never (a fetch of itself, issue 29 item 4).
      const ownOrigin = new URL(settings.baseUrl).origin
      const sandboxBase = endpoints.offered(PROVIDER) ? endpoints.endpoint(PROVIDER).baseUrl : ""
      const sandboxOrigin = URL.canParse(sandboxBase) && sandboxBase.includes("/sandbox/") ? new URL(sandboxBase).origin : ownOrigin
      const trusted: ReadonlySet<string> = new Set(sandboxOrigin === ownOrigin ? [] : [sandboxOrigin])

      /** The profile's current chat_app_a connection, the one `connection_id` must name when given. */
      const connectionOf = (profile: ProfileContext, connectionId: string | undefined) =>
        Effect.gen(function*() {
          const current = yield* connections.currentOf(profile.profileId, PROVIDER)
          if (Option.isNone(current)) {
            return yield* new ChatAppAConnectionRequired({
              message: "The profile has no chat_app_a connection: connect it through POST /api/v1/connections/chat_app_a/handoff.",
              reason: "chat_app_a_connection_required"
            })
          }
          if (connectionId !== undefined && connectionId.toLowerCase() !== current.value.id) {
            return yield* new NotFound({ message: `Connection ${connectionId} is not the profile's chat_app_a connection.` })
          }
          return current.value
        })

      const templatesOf = (profile: ProfileContext) =>
        onConnection(profile.profileId, PROVIDER, { what: "The business account" }, (session) =>
          Effect.map(Stream.runCollect(Stream.take(chat.templates(session), MAX_TEMPLATES)), (all) => Array.from(all)))

      const list = Effect.fn("ChatTemplates.list")(function*(profile: ProfileContext, query: TemplatesQuery) {
        yield* connectionOf(profile, query.connection_id)
        return (yield* templatesOf(profile)).map(renderTemplate)
      })

      const create = Effect.fn("ChatTemplates.create")(function*(profile: ProfileContext, body: CreateTemplateBody) {
        if (body.header_text !== undefined && body.header_media !== undefined) {
          return yield* new ValidationError({ message: "body.header_media: exclusive with header_text; send one header" })
        }
        yield* connectionOf(profile, body.connection_id)
        if (body.header_media !== undefined) {
          const media = body.header_media
          const url = media.url.trim()
          const checked = URL.canParse(url) && new URL(url).origin === ownOrigin
            ? { kind: "invalid" as const, problem: "url points at this service" }
            : yield* checkMedia(url, media.format, trusted)
          if (checked.kind === "invalid") {
            return yield* new InvalidContent({ message: `header_media: ${checked.problem}.`, reason: "media_unusable" })
          }
          if (checked.kind === "too_large") {
            return yield* new PayloadTooLarge({
              message: `header_media: a ${media.format} header is at most ${Math.round(checked.maxBytes / (1024 * 1024))} MB.`,
              reason: "media_too_large"
            })
          }
        }
        const created = yield* onConnection(profile.profileId, PROVIDER, { what: "The business account" }, (session) =>
          chat.createTemplate(session, {
            name: body.name,
            language: body.language,
            category: body.category,
            bodyText: body.body_text.trim(),
            ...(body.header_text === undefined ? {} : { headerText: body.header_text.trim() }),
            ...(body.header_media === undefined ? {} : { headerMedia: { format: body.header_media.format, url: body.header_media.url.trim() } })
          }))
        return renderTemplate(created)
      })

      const fetch = (profile: ProfileContext, connection: ConnectionRecord, name: string, language: string | undefined, start: string, end: string) =>
        onConnection(profile.profileId, PROVIDER, { what: `Template ${name}` }, (session) =>
          Effect.gen(function*() {
            const all = yield* Stream.runCollect(Stream.take(chat.templates(session), MAX_TEMPLATES))
            const chosen = Array.from(all).filter((t) => t.name === name && (language === undefined || t.language === language))
            if (chosen.length === 0) {
              return yield* new TemplateNotFound({
                message: `The business account has no template named "${name.slice(0, 100)}"${language === undefined ? "" : ` in ${language.slice(0, 20)}`}.`
              })
            }
            const rows = yield* chat.templateAnalytics(session, { since: start, until: end, templateIds: chosen.map((t) => t.id) }).pipe(
              Effect.catchTag("TemplateInsightsEnabling", (enabling) =>
                Effect.fail(new InsightsEnabling({
                  message: "Template analytics were off for this business account and are being switched on; ask again later.",
                  retry_after_seconds: Math.max(1, Math.ceil(enabling.retryAfterSeconds))
                }))),
              Effect.catchTag("ProviderRefused", (refused): Effect.Effect<never, ProviderRefused | InsightsUnsupported> =>
                refused.code === "insights_unsupported"
                  ? Effect.fail(new InsightsUnsupported({
                    message: "This business account's type does not allow template analytics.",
                    provider: PROVIDER,
                    provider_status: refused.status,
                    provider_code: refused.code,
                    provider_message: refused.detail.slice(0, 200)
                  }))
                  : Effect.fail(refused))
            )
            const value: Analytics = {
              template: {
                name,
                languages: [...new Set(chosen.map((t) => t.language))].sort(),
                template_ids: chosen.map((t) => t.id).sort()
              },
              connection_id: connection.id,
              start,
              end,
              ...series(rows, start, end),
              fetched_at: new Date().toISOString()
            }
            return value
          }))

      const analytics = Effect.fn("ChatTemplates.analytics")(function*(profile: ProfileContext, name: string, query: TemplateAnalyticsQuery) {
        const { end, start } = yield* rangeOf(query, Date.now())
        const connection = yield* connectionOf(profile, query.connection_id)
        const key = JSON.stringify([connection.id, name, query.language ?? null, start, end])
        const hit = cache.get(key)
        if (hit !== undefined && Date.now() - hit.at < CACHE_SECONDS * 1000) return hit.value
        const value = yield* fetch(profile, connection, name, query.language, start, end)
        cache.delete(key)
        cache.set(key, { at: Date.now(), value })
        // A Map iterates in insertion order: the first key is the oldest answer.
        if (cache.size > CACHE_ENTRIES) {
          const oldest = cache.keys().next()
          if (oldest.done !== true) cache.delete(oldest.value)
        }
        return value
      })

      return { list, create, analytics }
    })
  ).pipe(Layer.provide([ConnectionSessions.layer, ProviderEndpoints.layer]))
}
