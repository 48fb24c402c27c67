import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { Workspaces } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { WorkspacesApi } from "./api.ts"

const data = <A>(value: A) => ({ data: value })

export const WorkspacesHandlers = HttpApiBuilder.group(groupApi(WorkspacesApi), "workspaces", (handlers) =>
  Effect.gen(function*() {
    const workspaces = yield* Workspaces
    return handlers.handleAll({
      listWorkspaces: ({ query }) => Effect.flatMap(Principal, (actor) => workspaces.list(actor, query)),
      createWorkspace: ({ payload }) => Effect.flatMap(Principal, (actor) => Effect.map(workspaces.create(actor, payload), data)),
      archiveWorkspace: ({ params }) =>
        Effect.flatMap(Principal, (actor) => Effect.map(workspaces.archive(actor, params.workspaceId), data)),
      setReportingCurrency: ({ params, payload }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.map(workspaces.setReportingCurrency(actor, params.workspaceId, payload.reporting_currency), data)),
      getMcpSettings: ({ params }) =>
        Effect.flatMap(Principal, (actor) => Effect.map(workspaces.mcpSettings(actor, params.workspaceId), data)),
      putMcpSettings: ({ params, payload }) =>
        Effect.flatMap(Principal, (actor) => Effect.map(workspaces.putMcpSettings(actor, params.workspaceId, payload), data)),
      listPiiAccess: ({ params, query }) =>
        Effect.flatMap(Principal, (actor) => workspaces.piiAccessLog(actor, params.workspaceId, query)),
      reportsHub: ({ params }) =>
        Effect.flatMap(Principal, (actor) => Effect.map(workspaces.reportsHub(actor, params.workspaceId), data))
    })
  })).pipe(Layer.provide(Workspaces.layer))
