import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { FeatureRetired } from "../../schema/errors.ts"
import { Api } from "../http/api.ts"

/**
 * The Deprecation middleware answers these operations before they run; the handlers only
 * restate the retirement in case the table and the routes ever disagree.
 */
const retired = Effect.fail(new FeatureRetired({ message: "This operation is retired." }))

export const RetiredHandlers = HttpApiBuilder.group(Api, "retired", (handlers) =>
  handlers.handleAll({
    dashboardChat: () => retired,
    topPerformersChat: () => retired
  }))
