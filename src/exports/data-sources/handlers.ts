import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { DataSources, type Ensured } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { DataSourcesApi } from "./api.ts"

/** 201 with `created: true` when this call wired the dataset, 200 otherwise. */
const envelope = (ensured: Ensured) =>
  ensured.created ? { data: { ...ensured, created: true as const } } : { data: { ...ensured, created: false as const } }

export const DataSourcesHandlers = HttpApiBuilder.group(groupApi(DataSourcesApi), "dataSources", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const service = yield* DataSources
    return handlers.handleAll({
      ensureWhatsappDataset: ({ payload }) => Effect.flatMap(access.current, (p) => Effect.map(service.ensureWhatsapp(p, payload), envelope)),
      ensureWebsiteDataset: ({ payload }) => Effect.flatMap(access.current, (p) => Effect.map(service.ensureWebsite(p, payload), envelope)),
      ensureInstagramDataset: ({ payload }) => Effect.flatMap(access.current, (p) => Effect.map(service.ensureInstagram(p, payload), envelope)),
      listDataSources: () => Effect.flatMap(access.current, (p) => Effect.map(service.list(p), (data) => ({ data }))),
      listDataSourceOptions: () => Effect.flatMap(access.current, (p) => Effect.map(service.options(p), (data) => ({ data }))),
      createDataset: ({ payload }) =>
        Effect.gen(function*() {
          const p = yield* access.current
          const { source, pixel_id, dataset_name } = payload
          const named = dataset_name === undefined ? {} : { dataset_name }
          if (source === "website") return envelope(yield* service.ensureWebsite(p, pixel_id === undefined ? {} : { pixel_id }))
          if (source === "whatsapp") return envelope(yield* service.ensureWhatsapp(p, named))
          return envelope(yield* service.ensureInstagram(p, named))
        })
    })
  })).pipe(Layer.provide([DataSources.layer, ProfileAccess.layer]))
