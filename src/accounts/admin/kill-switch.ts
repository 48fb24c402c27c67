/**
 * The commerce-app kill switch (decision 0066): the app disabled and every connection made
 * through it revoked. Connections sit above accounts, so what happens to them is a port
 * (`CommerceAppConnections`) the connections context implements and src/main/ provides.
 */
import { Context, Effect, Layer } from "effect"
import { isUuid } from "../../../schema/common.ts"
import { type DatabaseUnavailable, NotFound } from "../../../schema/errors.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import type { PrincipalShape } from "../../kernel/principal.ts"
import { AdminRepo } from "./repo.ts"

/** The connections made through a commerce app, as the kill switch needs them (implemented above accounts). */
export class CommerceAppConnections extends Context.Service<CommerceAppConnections, {
  /**
   * Stops their push channels, while the tokens still open. Best effort: a store that cannot be
   * reached is logged; its callbacks are ignored once the connections are revoked.
   */
  readonly stopChannels: (commerceAppId: string) => Effect.Effect<void, DatabaseUnavailable>
  /** Revokes every live one (one `connection.revoked` each) in the caller's transaction; answers how many. */
  readonly revokeAll: (commerceAppId: string) => Effect.Effect<number, DatabaseUnavailable>
}>()("svc/CommerceAppConnections") {}

export class CommerceAppKillSwitch extends Context.Service<CommerceAppKillSwitch, {
  /**
   * The push channels stopped first, while the tokens still open; then the app disabled and its
   * connections revoked in one transaction, so a failed call changes nothing and may be retried.
   */
  readonly disable: (actor: PrincipalShape, id: string) => Effect.Effect<void, NotFound | DatabaseUnavailable>
}>()("svc/CommerceAppKillSwitch") {
  static readonly layer = Layer.effect(CommerceAppKillSwitch)(
    Effect.gen(function*() {
      const repo = yield* AdminRepo
      const audit = yield* AuditLog
      const connections = yield* CommerceAppConnections

      const disable = Effect.fn("CommerceAppKillSwitch.disable")(function*(actor: PrincipalShape, id: string) {
        const noSuchCommerceApp = () => new NotFound({ message: "No such commerce app." })
        yield* connections.stopChannels(id)
        if (!isUuid(id)) return yield* noSuchCommerceApp()
        yield* repo.transaction(Effect.gen(function*() {
          if (!(yield* repo.disableCommerceApp(id))) return yield* noSuchCommerceApp()
          const revoked = yield* connections.revokeAll(id)
          yield* audit.record({
            actor,
            action: "commerce_app.disabled",
            targetKind: "commerce_app",
            targetId: id,
            details: { revoked_connections: revoked }
          })
        }))
      })

      return { disable }
    })
  ).pipe(Layer.provide([AdminRepo.layer, AuditLog.layer]))
}
