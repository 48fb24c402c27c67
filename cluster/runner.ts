/**
 * The runner layers: `single` (one in-process runner, embedded PGlite or PostgreSQL) and
 * `socket` (this process is one of several runners sharing PostgreSQL, reached by the others
 * on `SVC_RUNNER_ADVERTISE_HOST:SVC_RUNNER_PORT`). Both keep runners, shard locks and
 * persisted messages in SQL, in the tables SqlRunnerStorage / SqlMessageStorage create with
 * their default prefix `cluster` (`cluster_runners`, `cluster_locks`, `cluster_messages`, ...).
 */
import { NodeClusterSocket, NodeCrypto } from "@effect/platform-node"
import { Duration, Layer, Option } from "effect"
import type { Config } from "effect"
import { RunnerAddress, Sharding, SingleRunner } from "effect/cluster"
import type { ShardingConfig } from "effect/cluster"
import type { SocketServerError } from "effect/socket/SocketServer"
import type { SqlClient } from "effect/sql/SqlClient"
import { NightlySyncLayer } from "../src/ingestion/sync/cron.ts"
import { type AppSettings, AppConfig } from "../src/platform/config.ts"
import { SecretBox } from "../src/platform/secret-box.ts"
import { ProvidersLayer } from "../src/connections/providers/layer.ts"
import { AdActionEngine } from "../src/ads/actions/engine.ts"
import { ConnectionSessions } from "../src/connections/sessions.ts"
import { AdSetLayer } from "./AdSet.ts"
import { CampaignLayer } from "./Campaign.ts"
import { ExperimentLayer } from "./Experiment.ts"
import { ExperimentEngine } from "../src/experiments/engine.ts"
import { SwitchbackDaysLayer } from "../src/experiments/cron.ts"
import { PartitionMaintenanceLayer } from "../src/ops/partitions/cron.ts"
import { HandOffLayer } from "./HandOff.ts"
import { ProfileLayer } from "./Profile.ts"
import type { AttributionBackfills } from "../src/accounts/entitlements/backfills.ts"
import { ClusterStatus, SHARD_GROUPS } from "../src/platform/cluster-status.ts"


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
    // On PGlite the runner storage uses table leases (DatabaseLayer marks the client `pglite`).
    ? SingleRunner.layer({ runnerStorage: "sql", shardingConfig: shardingConfig(settings) }).pipe(
      Layer.provide(NodeCrypto.layerDigest)
    )
    : NodeClusterSocket.layer({ storage: "sql", shardingConfig: shardingConfig(settings) })

/**
 * Sharding for `AppConfig.cluster.mode`, with the Profile and HandOff entities and the nightly
 * provider sync (decision 0058) registered and `ClusterStatus` alongside.
 */
export const ClusterLayer: Layer.Layer<
  Sharding.Sharding | ClusterStatus,
  Config.ConfigError | SocketServerError,
  // The Profile entity's entitlement changes queue backfills above accounts: a port src/main/ provides.
  AppConfig | SqlClient | AttributionBackfills
> = Layer.mergeAll(
  ProfileLayer,
  // The HandOff entity calls the providers and seals their tokens; the layers are shared by reference within a build.
  HandOffLayer.pipe(Layer.provide([ProvidersLayer, SecretBox.layer])),
  NightlySyncLayer,
  ClusterStatus.layer,
  // Ad actions (issue 19): one message at a time per ad set and per campaign, on the same provider layer.
  Layer.mergeAll(AdSetLayer, CampaignLayer).pipe(
    Layer.provide(AdActionEngine.layer),
    Layer.provide(ConnectionSessions.layer),
    Layer.provide([ProvidersLayer, SecretBox.layer])
  ),
  // Experiments (issue 32): one message at a time per experiment (decision 0122).
  // A switchback's days act through the ad actions (decision 0124), on the same provider layer.
  ExperimentLayer.pipe(Layer.provide(ExperimentEngine.layer), Layer.provide([ProvidersLayer, SecretBox.layer])),
  // The switchbacks' day tick (decision 0124): once per cluster, every few minutes.
  SwitchbackDaysLayer,
  // The partitioned logs' months ahead and retention (decision 0133): once per cluster, every hour.
  PartitionMaintenanceLayer
).pipe(
  Layer.provideMerge(Layer.unwrap(AppConfig.useSync(shardingLayer)))
)
