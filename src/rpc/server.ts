/**
 * The internal RPC surface: `ServiceRpcs` (schema/rpc.ts) served at `POST /rpc` with JSON
 * serialization on the same HttpRouter as the HTTP API. Profile calls go through the sharding
 * client, so a call made on any runner lands on the runner owning the profile's shard.
 */
import { Effect, Layer, Option } from "effect"
import type { Sharding } from "effect/cluster"
import type { HttpRouter } from "effect/http"
import { RpcSerialization, RpcServer } from "effect/rpc"
import { SqlClient } from "effect/sql/SqlClient"
import { routeProfileCall } from "../../cluster/calls.ts"
import { Profile } from "../../cluster/Profile.ts"
import { ClusterStatus } from "../../cluster/runner.ts"
import { RpcAuth, RpcUnauthorized, ServiceRpcs, type ServiceStatusInfo } from "../../schema/rpc.ts"
import { AppConfig } from "../platform/config.ts"
import { secretMatches } from "../platform/secrets.ts"
import { DatabaseInfo } from "../platform/database.ts"
import { latestMigrationId } from "../platform/migrator.ts"
import { DatabaseProbe } from "../ops/repo.ts"
import { VERSION } from "../platform/version.ts"
import { timedRpcCall } from "../platform/metrics.ts"
import { rpcServerSpans } from "../platform/tracing.ts"

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i

/** `Authorization: Bearer <SVC_RPC_TOKEN>`, compared in constant time; no token configured refuses all. */
export const RpcAuthLive = Layer.effect(RpcAuth)(
  Effect.gen(function*() {
    const { rpcToken } = yield* AppConfig
    const expected = rpcToken
    const refuse = (message: string) => Effect.fail(new RpcUnauthorized({ message }))

    return RpcAuth.of((effect, { headers, rpc }) => {
      if (Option.isNone(expected)) return refuse("RPC is disabled: no SVC_RPC_TOKEN is configured.")
      const match = BEARER.exec(headers["authorization"] ?? "")
      if (match === null) return refuse("Missing bearer token.")
      // Calls let through are timed by method (rpc.server.call.duration).
      return secretMatches(match[1] ?? "", expected.value) ? timedRpcCall("ServiceRpcs", rpc._tag)(effect) : refuse("Invalid bearer token.")
    })
  })
)

const ServiceHandlersLive = ServiceRpcs.toLayer(
  Effect.gen(function*() {
    const makeProfile = yield* Profile.client
    const clusterStatus = yield* ClusterStatus
    const database = yield* DatabaseInfo
    const databaseProbe = yield* DatabaseProbe

    const probeDatabase = databaseProbe.appliedMigration.pipe(
      Effect.map((applied) => ({ applied })),
      Effect.timeoutOrElse({ duration: "2 seconds", orElse: () => Effect.succeed(undefined) }),
      Effect.catchTag("DatabaseUnavailable", () => Effect.succeed(undefined))
    )

    const serviceStatus = Effect.fn("Rpc.ServiceStatus")(function*() {
      const probe = yield* probeDatabase
      const cluster = probe === undefined
        ? yield* clusterStatus.local
        : yield* clusterStatus.status.pipe(Effect.catchTag("DatabaseUnavailable", () => clusterStatus.local))
      const status: ServiceStatusInfo = {
        version: VERSION,
        database: {
          mode: database.mode,
          location: database.location,
          reachable: probe !== undefined,
          migrations: { applied: probe?.applied ?? null, latest: latestMigrationId }
        },
        cluster
      }
      return status
    })

    return ServiceRpcs.of({
      ServiceStatus: serviceStatus,
      ProfileGetState: Effect.fn("Rpc.ProfileGetState")(function*({ profile_id }) {
        return yield* routeProfileCall(makeProfile(profile_id.toLowerCase()).GetState(), "runner_timeout")
      }),
      ProfileBumpRevocationEpoch: Effect.fn("Rpc.ProfileBumpRevocationEpoch")(function*({ profile_id }) {
        return yield* routeProfileCall(makeProfile(profile_id.toLowerCase()).BumpRevocationEpoch(), "outcome_unknown")
      })
    })
  })
).pipe(Layer.provide(DatabaseProbe.layer))

/** Serves `ServiceRpcs` at `POST /rpc` on the application's HttpRouter. */
export const RpcLive: Layer.Layer<
  never,
  never,
  HttpRouter.HttpRouter | AppConfig | Sharding.Sharding | ClusterStatus | DatabaseInfo | SqlClient
> = RpcServer.layerHttp({ group: ServiceRpcs, path: "/rpc", protocol: "http", ...rpcServerSpans("ServiceRpcs") }).pipe(
  Layer.provide([ServiceHandlersLive, RpcAuthLive, RpcSerialization.layerJson])
)
