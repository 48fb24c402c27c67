/**
 * What this process knows about the cluster, for the status pages and the RPC status call:
 * runners from the runner table, shards from Sharding. Infrastructure, so the surfaces read it
 * without importing the runner layers in cluster/.
 */
import { Context, Effect, Layer } from "effect"
import { ShardId, Sharding } from "effect/cluster"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import type { ClusterStatusInfo } from "../../schema/rpc.ts"
import { type AppSettings, AppConfig } from "./config.ts"
import { RunnersRepo } from "./cluster-runners-repo.ts"

export const SHARD_GROUPS = ["default"] as const

export const advertisedAddress = (settings: AppSettings) =>
  `${settings.cluster.runnerAdvertiseHost}:${settings.cluster.runnerPort}`

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
