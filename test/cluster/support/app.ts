import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { createServer } from "node:http"
import { ClusterLayer } from "../../../cluster/runner.ts"
import { AttributionBackfillsLayer, CalibrationsLayer } from "../../../src/main/ports.ts"
import { DatabaseLayer } from "../../../src/platform/database.ts"
import { migrate } from "../../../src/platform/migrator.ts"
import { RpcLayer } from "../../../src/rpc/server.ts"
import { PiiAccessLog } from "../../../src/kernel/audit/pii-access.ts"
import { RateLimiterLayer } from "../../../src/platform/rate-limit.ts"
import { SecretBox } from "../../../src/platform/secret-box.ts"

const MigrationsLayer = Layer.effectDiscard(Effect.orDie(migrate))

/**
 * What the service runs for the RPC surface: database (migrated), cluster, `/rpc` on an
 * HttpRouter served on `port` (0 picks a free one). Needs AppConfig.
 */
export const serverLayer = (options: { readonly host?: string; readonly port: number }) =>
  HttpRouter.serve(RpcLayer.pipe(Layer.provide(CalibrationsLayer)), { disableListenLog: true, disableLogger: true }).pipe(
    // The Profile entity's entitlement backfills, as the composition root provides them.
    Layer.provideMerge(ClusterLayer.pipe(Layer.provide(AttributionBackfillsLayer))),
    // What the RPC middleware and the parity calls' services need besides the cluster.
    Layer.provide(Layer.mergeAll(PiiAccessLog.layer, RateLimiterLayer, SecretBox.layer)),
    Layer.provide(MigrationsLayer),
    Layer.provideMerge(DatabaseLayer),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: options.port, host: options.host ?? "127.0.0.1" }))
  )

/** The port an HttpServer listens on. */
export const serverPort = HttpServer.HttpServer.useSync((server) =>
  "port" in server.address ? server.address.port : 0
)
