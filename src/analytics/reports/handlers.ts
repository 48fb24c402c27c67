import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { Reports } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { ReportsApi } from "./api.ts"

export const ReportsHandlers = HttpApiBuilder.group(groupApi(ReportsApi), "reports", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const reports = yield* Reports
    const data = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.map(effect, (value) => ({ data: value }))
    return handlers.handleAll({
      listReports: ({ query }) => Effect.flatMap(access.current, (profile) => reports.list(profile, query)),
      createReport: ({ payload }) => Effect.flatMap(access.current, (profile) => data(reports.create(profile, payload))),
      generateReport: ({ params }) => Effect.flatMap(access.current, (profile) => data(reports.generate(profile, params.id.toLowerCase()))),
      sendReport: ({ params, payload }) =>
        Effect.flatMap(access.current, (profile) => data(reports.send(profile, params.id.toLowerCase(), payload))),
      listReportRuns: ({ params, query }) => Effect.flatMap(access.current, (profile) => reports.runs(profile, params.id.toLowerCase(), query)),
      reportCsv: ({ params }) => Effect.flatMap(access.current, (profile) => reports.csv(profile, params.id.toLowerCase(), params.runId.toLowerCase())),
      reportPdf: ({ params }) => Effect.flatMap(access.current, (profile) => reports.pdf(profile, params.id.toLowerCase(), params.runId.toLowerCase()))
    })
  })).pipe(Layer.provide([Reports.layer, ProfileAccess.layer]))
