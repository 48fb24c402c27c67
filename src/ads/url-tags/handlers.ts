import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { UrlTags } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { UrlTagsApi } from "./api.ts"

export const UrlTagsHandlers = HttpApiBuilder.group(groupApi(UrlTagsApi), "urlTags", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const tags = yield* UrlTags
    const caller = Effect.flatMap(Principal, (actor) => Effect.map(access.current, (profile) => ({ actor, profile })))
    return handlers.handleAll({
      urlTagsStatus: () => Effect.flatMap(caller, ({ actor, profile }) => tags.status(actor, profile)),
      applyUrlTags: ({ payload }) => Effect.flatMap(caller, ({ actor, profile }) => tags.apply(actor, profile, payload)),
      undoUrlTags: ({ payload }) => Effect.flatMap(caller, ({ actor, profile }) => tags.undo(actor, profile, payload.ad_id))
    })
  })).pipe(Layer.provide([UrlTags.layer, ProfileAccess.layer]))
