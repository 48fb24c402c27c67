/** Calling the Profile entity from a request: bounded wait, cluster failures as catalogued errors. */
import { Effect } from "effect"
import type { ClusterError } from "effect/cluster"
import { type DatabaseUnavailable, ServiceUnavailable } from "../../schema/errors.ts"
import { databaseUnavailable } from "./database.ts"

/** How long a profile call may wait for the shard owner (covers a runner failover). */
export const PROFILE_CALL_TIMEOUT = "20 seconds"

const clusterUnavailable = (reason: string) =>
  new ServiceUnavailable({
    message: "The profile's runner did not answer. Retry the same request shortly.",
    reason,
    retry_after_seconds: 2
  })

type EntityCallError =
  | ClusterError.MailboxFull
  | ClusterError.AlreadyProcessingMessage
  | ClusterError.PersistenceError
  | ClusterError.EntityNotAssignedToRunner

const transientReasons = {
  MailboxFull: "mailbox_full",
  AlreadyProcessingMessage: "already_processing",
  EntityNotAssignedToRunner: "shard_moving"
} as const

const isEntityCallError = (error: unknown): error is EntityCallError =>
  typeof error === "object" && error !== null && "_tag" in error &&
  (error._tag === "PersistenceError" || error._tag === "MailboxFull" || error._tag === "AlreadyProcessingMessage" ||
    error._tag === "EntityNotAssignedToRunner")

/**
 * Cluster transport errors are transient (`service_unavailable`, retry); a persistence failure
 * is the database being away. `onTimeout` names what a timed-out call means for the caller.
 */
export const routeProfileCall = <A, E>(
  effect: Effect.Effect<A, E>,
  onTimeout: string
): Effect.Effect<A, Exclude<E, EntityCallError> | ServiceUnavailable | DatabaseUnavailable> =>
  effect.pipe(
    Effect.mapError((error) =>
      isEntityCallError(error)
        ? error._tag === "PersistenceError" ? databaseUnavailable() : clusterUnavailable(transientReasons[error._tag])
        : error
    ),
    Effect.timeoutOrElse({
      duration: PROFILE_CALL_TIMEOUT,
      orElse: () => Effect.fail(clusterUnavailable(onTimeout))
    })
    // mapError cannot express "E without the cluster errors" generically; the mapping above removes them.
  ) as Effect.Effect<A, Exclude<E, EntityCallError> | ServiceUnavailable | DatabaseUnavailable>
