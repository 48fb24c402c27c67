import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../../http/api.ts"
import { ProfileAccess } from "../../tenancy/access.ts"
import { DataSources, type Ensured } from "./service.ts"

/** 201 with `created: true` when this call wired the dataset, 200 otherwise. */
const envelope = (ensured: Ensured) =>
  ensured.created ? { data: { ...ensured, created: true as const } } : { data: { ...ensured, created: false as const } }

export const DataSourcesHandlers = HttpApiBuilder.group(Api, "dataSources", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const service = yield* DataSources
    return handlers.handleAll({
      ensureWhatsappDataset: ({ payload }) => Effect.flatMap(access.current, (p) => Effect.map(service.ensureWhatsapp(p, payload), envelope)),
      ensureWebsiteDataset: ({ payload }) => Effect.flatMap(access.current, (p) => Effect.map(service.ensureWebsite(p, payload), envelope)),
      ensureInstagramDataset: ({ payload }) => Effect.flatMap(access.current, (p) => Effect.map(service.ensureInstagram(p, payload), envelope))
    })
  })).pipe(Layer.provide([DataSources.layer, ProfileAccess.layer]))
