import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { FeatureRetired } from "../../../schema/errors.ts"
import { groupApi } from "../group-api.ts"
import { RetiredApi } from "./api.ts"

/**
 * The Deprecation middleware answers these operations before they run; the handlers only
 * restate the retirement in case the table and the routes ever disagree.
 */
const retired = Effect.fail(new FeatureRetired({ message: "This operation is retired." }))

export const RetiredHandlers = HttpApiBuilder.group(groupApi(RetiredApi), "retired", (handlers) =>
  handlers.handleAll({
    dashboardChat: () => retired,
    topPerformersChat: () => retired
  }))
