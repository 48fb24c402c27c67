/**
 * The runner layers: `single` (one in-process runner, embedded PGlite or PostgreSQL) and
 * `socket` (this process is one of several runners sharing PostgreSQL, reached by the others
 * on `SVC_RUNNER_ADVERTISE_HOST:SVC_RUNNER_PORT`). Both keep runners, shard locks and
 * persisted messages in SQL, in the tables SqlRunnerStorage / SqlMessageStorage create with
 * their default prefix `cluster` (`cluster_runners`, `cluster_locks`, `cluster_messages`, ...).
 */
import { NodeClusterSocket, NodeCrypto } from "@effect/platform-node"
import { Context, Duration, Effect, Layer, Option } from "effect"
import type { Config } from "effect"
import { RunnerAddress, ShardId, Sharding, SingleRunner } from "effect/cluster"
import type { ShardingConfig } from "effect/cluster"
import type { SocketServerError } from "effect/socket/SocketServer"
import type { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../schema/errors.ts"
import type { ClusterStatusInfo } from "../schema/rpc.ts"
import { NightlySyncLive } from "../src/connections/sync/cron.ts"
import { type AppSettings, AppConfig } from "../src/platform/config.ts"
import { SecretBox } from "../src/platform/secret-box.ts"
import { ProvidersLive } from "../src/providers/layer.ts"
import { AdActionEngine } from "../src/ads/actions/engine.ts"
import { ConnectionSessions } from "../src/connections/sessions.ts"
import { AdSetLive } from "./AdSet.ts"
import { CampaignLive } from "./Campaign.ts"
import { HandOffLive } from "./HandOff.ts"
import { ProfileLive } from "./Profile.ts"
import { RunnersRepo } from "./runners-repo.ts"

const SHARD_GROUPS = ["default"] as const

const advertisedAddress = (settings: AppSettings) =>
  `${settings.cluster.runnerAdvertiseHost}:${settings.cluster.runnerPort}`

/**
 * Every field set explicitly: ShardingConfig otherwise reads unprefixed env names (`HOST`,
 * `PORT`, ...) that belong to the HTTP server.
 */
const shardingConfig = (settings: AppSettings): Partial<ShardingConfig.ShardingConfig["Service"]> => {
  const { cluster } = settings
  return {
    runnerAddress: Option.some(RunnerAddress.make(cluster.runnerAdvertiseHost, cluster.runnerPort)),
    runnerListenAddress: Option.some(RunnerAddress.make(cluster.runnerHost, cluster.runnerPort)),
    availableShardGroups: SHARD_GROUPS,
    assignedShardGroups: SHARD_GROUPS,
    shardsPerGroup: cluster.shardsPerGroup,
    runnerHealthCheckInterval: Duration.millis(cluster.healthCheckIntervalMs),
    shardLockRefreshInterval: Duration.millis(cluster.shardLockRefreshIntervalMs),
    shardLockExpiration: Duration.millis(cluster.shardLockExpirationMs)
  }
}

type ShardingLayer = Layer.Layer<Sharding.Sharding, Config.ConfigError | SocketServerError, SqlClient>

const shardingLayer = (settings: AppSettings): ShardingLayer =>
  settings.cluster.mode === "single"
    // On PGlite the runner storage uses table leases (DatabaseLive marks the client `pglite`).
    ? SingleRunner.layer({ runnerStorage: "sql", shardingConfig: shardingConfig(settings) }).pipe(
      Layer.provide(NodeCrypto.layerDigest)
    )
    : NodeClusterSocket.layer({ storage: "sql", shardingConfig: shardingConfig(settings) })

/** What this process knows about the cluster: runners from the runner table, shards from Sharding. */
export class ClusterStatus extends Context.Service<ClusterStatus, {
  readonly status: Effect.Effect<ClusterStatusInfo, DatabaseUnavailable>
  /** The same without reading the database (`runners` empty): for status pages while it is away. */
  readonly local: Effect.Effect<ClusterStatusInfo>
}>()("svc/ClusterStatus") {
  static readonly layer = Layer.effect(ClusterStatus)(
    Effect.gen(function*() {
      const runners = yield* RunnersRepo
      const sharding = yield* Sharding.Sharding
      const settings = yield* AppConfig
      const { cluster } = settings
      const expirationSeconds = Math.ceil(cluster.shardLockExpirationMs / 1000)
      const shardIds = SHARD_GROUPS.flatMap((group) =>
        Array.from({ length: cluster.shardsPerGroup }, (_, i) => ShardId.make(group, i + 1))
      )
      const runnerAddress = cluster.mode === "single" ? "single" : advertisedAddress(settings)

      const local = Effect.sync((): ClusterStatusInfo => ({
        mode: cluster.mode,
        runner_address: runnerAddress,
        runners: [],
        shards: {
          total: shardIds.length,
          owned_by_this_runner: shardIds.filter((id) => sharding.hasShardId(id)).length
        }
      }))

      const status = Effect.gen(function*() {
        // A runner counts as healthy when flagged so and its heartbeat is younger than the lock expiry.
        const rows = yield* runners.list(expirationSeconds)
        const base = yield* local
        return { ...base, runners: rows }
      }).pipe(Effect.withSpan("ClusterStatus.status"))

      return { status, local }
    })
  ).pipe(Layer.provide(RunnersRepo.layer))
}

/**
 * Sharding for `AppConfig.cluster.mode`, with the Profile and HandOff entities and the nightly
 * provider sync (decision 0058) registered and `ClusterStatus` alongside.
 */
export const ClusterLive: Layer.Layer<
  Sharding.Sharding | ClusterStatus,
  Config.ConfigError | SocketServerError,
  AppConfig | SqlClient
> = Layer.mergeAll(
  ProfileLive,
  // The HandOff entity calls the providers and seals their tokens; the layers are shared by reference within a build.
  HandOffLive.pipe(Layer.provide([ProvidersLive, SecretBox.layer])),
  NightlySyncLive,
  ClusterStatus.layer,
  // Ad actions (issue 19): one message at a time per ad set and per campaign, on the same provider layer.
  Layer.mergeAll(AdSetLive, CampaignLive).pipe(
    Layer.provide(AdActionEngine.layer),
    Layer.provide(ConnectionSessions.layer),
    Layer.provide([ProvidersLive, SecretBox.layer])
  )
).pipe(
  Layer.provideMerge(Layer.unwrap(AppConfig.useSync(shardingLayer)))
)
