import { Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { checkFormPost, FORM_TOKEN_FIELD, formGrantFor, ownOriginOf } from "../same-origin.ts"
import { mediaTypeOf } from "../../platform/request-info.ts"
import { AppConfig } from "../../platform/config.ts"
import { foreignFormPage, passwordFormPage, passwordSetPage, unusableLinkPage } from "./pages.ts"
import { People } from "./service.ts"
import { groupApi, publicGroupApi } from "../../http/group-api.ts"
import { PeopleAdminApi, PasswordsApi, PasswordPagesApi } from "./api.ts"

/** People signs a person's sessions out when their password changes. */

export const PeopleAdminHandlers = HttpApiBuilder.group(groupApi(PeopleAdminApi), "peopleAdmin", (handlers) =>
  Effect.gen(function*() {
    const people = yield* People
    return handlers.handle("createPasswordLink", ({ payload }) =>
      Effect.map(Effect.flatMap(Principal, (actor) => people.issueLink(actor, payload.email, payload.purpose)), (data) => ({ data })))
  })).pipe(Layer.provide(People.layer))

export const PasswordsHandlers = HttpApiBuilder.group(groupApi(PasswordsApi), "passwords", (handlers) =>
  Effect.gen(function*() {
    const people = yield* People
    return handlers.handle("setPassword", ({ payload }) =>
      Effect.map(people.setPassword(payload.token, payload.password), (data) => ({ data })))
  })).pipe(Layer.provide(People.layer))

/** Raw handlers: a malformed form answers the page again (or the unusable-link page), never the envelope. */
export const PasswordPagesHandlers = HttpApiBuilder.group(publicGroupApi(PasswordPagesApi), "passwordPages", (handlers) =>
  Effect.gen(function*() {
    const people = yield* People
    const settings = yield* AppConfig
    const ownOrigin = ownOriginOf(settings.baseUrl)
    return handlers
      .handleRaw("passwordPage", ({ request }) =>
        Effect.gen(function*() {
          const token = new URL(request.url, "http://localhost").searchParams.get("token") ?? ""
          const link = yield* people.viewLink(token)
          if (Option.isNone(link)) return unusableLinkPage()
          return passwordFormPage({
            token,
            email: link.value.email,
            purpose: link.value.purpose,
            error: null,
            grant: formGrantFor(request)
          })
        }))
      .handleRaw("passwordForm", ({ request }) =>
        Effect.gen(function*() {
          const text = yield* Effect.orDie(request.text)
          const isForm = mediaTypeOf(request.headers["content-type"]) === "application/x-www-form-urlencoded"
          const form = new URLSearchParams(isForm ? text : "")
          // Defence in depth (decision 0107): the link's token is already a secret another site lacks.
          const guard = checkFormPost(request, ownOrigin, form.get(FORM_TOKEN_FIELD) ?? undefined)
          if (guard._tag === "Refused" && guard.reason === "cross_site") return foreignFormPage("cross_site")
          if (!isForm) return unusableLinkPage()
          if (guard._tag === "Refused") return foreignFormPage(guard.reason)
          const token = form.get("token") ?? ""
          const password = form.get("password") ?? ""
          const link = yield* people.viewLink(token)
          if (Option.isNone(link)) return unusableLinkPage()
          const again = (error: string) =>
            passwordFormPage({ token, email: link.value.email, purpose: link.value.purpose, error, grant: guard.grant })
          if (password !== (form.get("password_confirmation") ?? "")) return again("The two passwords differ.")
          return yield* people.setPassword(token, password).pipe(
            Effect.map((changed) => passwordSetPage(changed.email, settings.baseUrl)),
            Effect.catchTags({
              ValidationError: (error) => Effect.succeed(again(error.message)),
              InvalidRequest: () => Effect.succeed(unusableLinkPage())
            })
          )
        }))
  })).pipe(Layer.provide(People.layer))
