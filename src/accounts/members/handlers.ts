import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type { ReconciledMember } from "../../../schema/members.ts"
import { appPrincipal } from "../../kernel/principal.ts"
import { Members } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { MembersApi } from "./api.ts"

/** The flag picks the answer's status: 201 when this call made the membership active, 200 otherwise. */
const createdOrReconciled = ({ member, created, changed }: ReconciledMember) =>
  created
    ? { data: { ...member, created: true as const, changed } }
    : { data: { ...member, created: false as const, changed } }

export const MembersHandlers = HttpApiBuilder.group(groupApi(MembersApi), "members", (handlers) =>
  Effect.gen(function*() {
    const members = yield* Members
    return handlers.handleAll({
      listMembers: ({ params, query }) =>
        Effect.gen(function*() {
          return yield* members.list(yield* appPrincipal, params.workspaceId, query)
        }),
      putMember: ({ params, payload }) =>
        Effect.gen(function*() {
          return createdOrReconciled(yield* members.reconcile(yield* appPrincipal, params.workspaceId, payload))
        }),
      removeMember: ({ params }) =>
        Effect.gen(function*() {
          return { data: { removed: yield* members.remove(yield* appPrincipal, params.workspaceId, params.userId) } }
        })
    })
  })).pipe(Layer.provide(Members.layer))
