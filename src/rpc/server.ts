/**
 * The internal RPC surface: `ServiceRpcs` (schema/rpc.ts) on the same HttpRouter as the HTTP
 * API, over HTTP and WebSocket, JSON, MessagePack or SchemaBinary (decisions 0082, 0113):
 *
 *   POST /rpc              HTTP, NDJSON or JSON  GET /rpc/ws          WebSocket, JSON
 *   POST /rpc/msgpack      HTTP, MessagePack     GET /rpc/ws/msgpack  WebSocket, MessagePack
 *   POST /rpc/binary       HTTP, SchemaBinary    GET /rpc/ws/binary   WebSocket, SchemaBinary
 *
 * `POST /rpc` picks by Content-Type: `application/x-ndjson` is framed (one message a line, so a
 * stream's items leave as they come); anything else is plain JSON, one array answered when every
 * call of the request has ended, which a stream never does: a streaming call there is refused.
 *
 * The parity calls run the HTTP API's domain services with the caller the RPC middleware
 * resolved (src/rpc/auth.ts); cluster calls go through the sharding client, so a call made on
 * any runner lands on the runner owning the profile's shard.
 */
import { Data, Duration, Effect, Layer, Option, Stream } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { RpcSchema, RpcSerialization, RpcServer } from "effect/rpc"
import { routeProfileCall } from "../platform/entity-calls.ts"
import { Profile } from "../accounts/profiles/entity.ts"
import { ClusterStatus } from "../platform/cluster-status.ts"
import type { IngestEvent } from "../../schema/events.ts"
import { type IngestBatchItem, RecordedFeedItem, ServiceRpcs, type ServiceStatusInfo } from "../../schema/rpc.ts"
import { CampaignsService } from "../analytics/campaigns/service.ts"
import { Calibrations } from "../analytics/calibration.ts"
import { calibrateCampaigns, calibrateOverview } from "../analytics/calibrated.ts"
import { AnalyticsService } from "../analytics/overview/service.ts"
import { AttributionJobs } from "../attribution/recompute/service.ts"
import { Principal, type PrincipalShape, type ProfileContext } from "../kernel/principal.ts"
import { CustomersService } from "../identity/customers/service.ts"
import { EventsService } from "../ingestion/events/outcomes/service.ts"
import { OutcomeReplay } from "../ingestion/events/replay/service.ts"
import { TrackingService } from "../ingestion/tracking/tracker/service.ts"
import { EntitlementSwitch } from "../accounts/profiles/set-entitlement.ts"
import { ExperimentReads } from "../experiments/service.ts"
import { DatabaseInfo } from "../platform/database.ts"
import { encodeCursor } from "../platform/pagination.ts"
import { latestMigrationId } from "../platform/migrator.ts"
import { DatabaseStatus } from "../ops/service.ts"
import { layerMsgPack } from "./msgpack.ts"
import { VERSION } from "../platform/version.ts"
import { rpcServerSpans } from "../platform/tracing.ts"
import { RpcAuthLayer, RpcCaller } from "./auth.ts"
import { RpcCredentials } from "./credentials/service.ts"
import { RpcCredentialsRepo } from "./credentials/repo.ts"

/**
 * A numeric `properties.value` as its literal: over HTTP the literal is re-read from the body;
 * an RPC payload carries the number itself, whose shortest form is its literal.
 */
const valueLiteralOf = (event: IngestEvent): Option.Option<string> =>
  typeof event.properties?.value === "number" ? Option.some(String(event.properties.value)) : Option.none()

/**
 * Events of a batch recorded at once: they share the recorder's group commit (decision 0036) as
 * concurrent HTTP requests do; answers stay in the batch's order.
 */
const BATCH_CONCURRENCY = 32

/** How long the feed waits before asking the outbox again once it has caught up. */
const FEED_POLL = Duration.seconds(1)

/**
 * The caller and the profile of a parity call, as the middleware resolved them. Reached only
 * through the middleware, which resolves a `service` principal for every call naming a profile.
 */
const caller: Effect.Effect<{ readonly principal: PrincipalShape; readonly profile: ProfileContext }> = Effect.gen(
  function*() {
    const principal = yield* RpcCaller
    if (principal === undefined || principal.kind !== "service") {
      return yield* Effect.die("a parity RPC call reached its handler without a resolved caller")
    }
    return { principal, profile: principal.profile }
  }
)

/** Runs a domain call as the resolved caller (the `Principal` the HTTP handlers read too). */
const asCaller = <A, E, R>(run: (principal: PrincipalShape, profile: ProfileContext) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(caller, ({ principal, profile }) => Effect.provideService(run(principal, profile), Principal, principal))

const ServiceHandlersLayer = ServiceRpcs.toLayer(
  Effect.gen(function*() {
    const makeProfile = yield* Profile.client
    const clusterStatus = yield* ClusterStatus
    const database = yield* DatabaseInfo
    const databaseStatus = yield* DatabaseStatus

    const serviceStatus = Effect.fn("Rpc.ServiceStatus")(function*() {
      const applied = yield* databaseStatus.appliedMigration
      const cluster = applied === undefined
        ? yield* clusterStatus.local
        : yield* clusterStatus.status.pipe(Effect.catchTag("DatabaseUnavailable", () => clusterStatus.local))
      const status: ServiceStatusInfo = {
        version: VERSION,
        database: {
          mode: database.mode,
          location: database.location,
          reachable: applied !== undefined,
          migrations: { applied: applied ?? null, latest: latestMigrationId }
        },
        cluster
      }
      return status
    })

    const events = yield* EventsService
    const replay = yield* OutcomeReplay
    const analytics = yield* AnalyticsService
    const campaigns = yield* CampaignsService
    const customers = yield* CustomersService
    const jobs = yield* AttributionJobs
    const tracking = yield* TrackingService
    const entitlements = yield* EntitlementSwitch
    const experiments = yield* ExperimentReads
    const calibrations = yield* Calibrations

    /** The feed: replay pages from the cursor, each event with the cursor after it; polls once caught up. */
    const recordedFeed = (
      principal: PrincipalShape,
      profile: ProfileContext,
      cursor: string | undefined,
      pageSize: number
    ) =>
      Stream.paginate(cursor, (from: string | undefined) =>
        Effect.gen(function*() {
          const page = yield* replay.list(principal, profile, from === undefined ? { limit: pageSize } : { cursor: from, limit: pageSize })
          const next = page.pagination.cursor ?? from
          if (page.data.length === 0) yield* Effect.sleep(FEED_POLL)
          // Every item carries a cursor: the page's for its last event, else a keyset just after it.
          const items: ReadonlyArray<typeof RecordedFeedItem.Type> = page.data.map((event, index) => ({
            event,
            cursor: index === page.data.length - 1 && next !== undefined
              ? next
              : encodeCursor({ createdAt: event.created_at, id: event.id })
          }))
          return [items, Option.some(next)] as const
        }))

    return ServiceRpcs.of({
      ServiceStatus: serviceStatus,
      ProfileGetState: Effect.fn("Rpc.ProfileGetState")(function*({ profile_id }) {
        return yield* routeProfileCall(makeProfile(profile_id.toLowerCase()).GetState(), "runner_timeout")
      }),
      ProfileBumpRevocationEpoch: Effect.fn("Rpc.ProfileBumpRevocationEpoch")(function*({ profile_id }) {
        return yield* routeProfileCall(makeProfile(profile_id.toLowerCase()).BumpRevocationEpoch(), "outcome_unknown")
      }),
      EventsIngest: ({ event }) => asCaller((_, profile) => events.ingest(profile, event, valueLiteralOf(event))),
      EventsIngestBatch: ({ events: batch }) =>
        asCaller((_, profile) =>
          Effect.map(
            Effect.forEach(batch, (event) =>
              events.ingest(profile, event, valueLiteralOf(event)).pipe(
                Effect.map((data): IngestBatchItem => ({ ok: true, data })),
                // One event's refusal is its answer; an unreachable database fails the batch (retry it whole).
                Effect.catchTags({
                  ValidationError: (error) => Effect.succeed<IngestBatchItem>({ ok: false, error }),
                  InvalidParameter: (error) => Effect.succeed<IngestBatchItem>({ ok: false, error }),
                  IdempotencyKeyConflict: (error) => Effect.succeed<IngestBatchItem>({ ok: false, error }),
                  InvalidState: (error) => Effect.succeed<IngestBatchItem>({ ok: false, error })
                })
              ), { concurrency: BATCH_CONCURRENCY }),
            (results) => ({ results })
          )),
      TouchesRecord: ({ event, user_agent }) =>
        asCaller((_, profile) =>
          Effect.map(
            // The collector itself: a server's request (no Origin, no peer address to meter), same checks.
            tracking.collect({
              body: new TextEncoder().encode(JSON.stringify(event)),
              headers: { "content-type": "application/json", "user-agent": user_agent },
              peerAddress: Option.none(),
              profileId: profile.profileId
            }),
            ({ result }) => ({ result })
          )),
      ConversionsList: ({ query }) => asCaller((_, profile) => events.listConversions(profile, query)),
      AnalyticsOverview: ({ query }) =>
        asCaller((_, profile) => Effect.flatMap(analytics.overview(profile, query), (answer) => calibrateOverview(calibrations, profile, query, answer))),
      AnalyticsTimeseries: ({ query }) => asCaller((_, profile) => analytics.timeseries(profile, query)),
      CampaignsList: ({ query }) =>
        asCaller((_, profile) => Effect.flatMap(campaigns.campaigns(profile, query), (answer) => calibrateCampaigns(calibrations, profile, query, answer))),
      ConversionJourneyGet: ({ conversion_id, query }) =>
        asCaller((principal, profile) => customers.conversionJourney(principal, profile, conversion_id, query)),
      PersonJourneyGet: ({ query }) => asCaller((principal, profile) => customers.personJourney(principal, profile, query)),
      CustomerJourneyGet: ({ customer_id, query }) =>
        asCaller((principal, profile) => customers.customerJourney(principal, profile, customer_id, query)),
      CustomersResolve: ({ query }) => asCaller((_, profile) => customers.listCustomers(profile, query)),
      CustomersErase: ({ erasure }) =>
        asCaller((principal, profile) => Effect.map(customers.erase(principal, profile, erasure), (data) => ({ data }))),
      AttributionRecompute: () =>
        asCaller((principal, profile) =>
          Effect.map(jobs.recompute(principal, profile), (recomputed) => ({
            data: recomputed.job,
            meta: { coalesced: recomputed.coalesced }
          }))),
      ReplayStatusGet: () => asCaller((_, profile) => Effect.map(jobs.replayStatus(profile), (data) => ({ data }))),
      EntitlementsSet: ({ change }) =>
        asCaller((principal, profile) =>
          entitlements.setForProvisioningApp(profile.profileId, change, principal.kind === "service" ? principal.credentialId : undefined)),
      ExperimentResultsGet: ({ experiment_id }) =>
        asCaller((_, profile) => Effect.map(experiments.results(profile, experiment_id), (data) => ({ data }))),
      OutcomesRecordedFeed: ({ cursor, page_size }) =>
        Stream.unwrap(Effect.map(caller, ({ principal, profile }) => recordedFeed(principal, profile, cursor, page_size ?? 200)))
    })
  })
).pipe(Layer.provide([
  DatabaseStatus.layer,
  EventsService.layer,
  OutcomeReplay.layer,
  AnalyticsService.layer,
  CampaignsService.layer,
  CustomersService.layer,
  AttributionJobs.layer,
  TrackingService.layer,
  EntitlementSwitch.layer,
  ExperimentReads.layer
]))

const serve = (path: "/rpc/binary" | "/rpc/ws" | "/rpc/ws/binary" | "/rpc/msgpack" | "/rpc/ws/msgpack") =>
  RpcServer.layerHttp({
    group: ServiceRpcs,
    path,
    protocol: path.startsWith("/rpc/ws") ? "websocket" : "http",
    ...rpcServerSpans("ServiceRpcs")
  }).pipe(Layer.provide(
    path.endsWith("/binary") ? RpcSerialization.layerSchemaBinary() : path.endsWith("/msgpack") ? layerMsgPack : RpcSerialization.layerJson
  ))

/** The calls whose answer is a stream. */
const streamingCalls: ReadonlySet<string> = new Set(
  Array.from(ServiceRpcs.requests.values()).filter((rpc) => RpcSchema.isStreamSchema(rpc.successSchema)).map((rpc) => rpc._tag)
)

/** A streaming call sent as plain JSON over HTTP: answered as a defect naming the framed ways. */
class StreamNeedsFraming extends Data.TaggedError("StreamNeedsFraming")<{ readonly message: string }> {}

const requestedStream = (message: unknown): string | undefined =>
  typeof message === "object" && message !== null && "_tag" in message && message._tag === "Request" &&
    "tag" in message && typeof message.tag === "string" && streamingCalls.has(message.tag)
    ? message.tag
    : undefined

/**
 * Plain JSON over HTTP, refusing streaming calls at once: its answer is written when every call
 * of the request has ended, so a stream's items would never leave (the feed never ends).
 */
const plainJson: RpcSerialization.RpcSerialization["Service"] = RpcSerialization.RpcSerialization.of({
  ...RpcSerialization.json,
  makeUnsafe: () => {
    const parser = RpcSerialization.json.makeUnsafe()
    return {
      decode: (data) => {
        const messages = parser.decode(data)
        const stream = messages.map(requestedStream).find((tag) => tag !== undefined)
        if (stream !== undefined) {
          // Thrown as the parsers report bad input; the server answers it as the request's defect.
          throw new StreamNeedsFraming({
            message: `${stream} is a stream: plain JSON over HTTP answers only when a call ends. ` +
              "Send Content-Type: application/x-ndjson to POST /rpc, or use /rpc/msgpack, /rpc/binary or a WebSocket endpoint."
          })
        }
        return messages
      },
      encode: parser.encode
    }
  }
})

const NDJSON = "application/x-ndjson"

/** True when the request's media type is NDJSON (parameters and case aside). */
const sendsNdjson = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() === NDJSON

/** A server of `ServiceRpcs` on one HTTP protocol. */
const serverOn = (protocol: RpcServer.Protocol["Service"]) =>
  RpcServer.layer(ServiceRpcs, rpcServerSpans("ServiceRpcs")).pipe(Layer.provide(Layer.succeed(RpcServer.Protocol)(protocol)))

/** `POST /rpc`: NDJSON (framed) or plain JSON by the request's Content-Type, one route. */
const HttpJsonRoutes = Layer.unwrap(Effect.gen(function*() {
  const framed = yield* RpcServer.makeProtocolWithHttpEffect().pipe(
    Effect.provideService(RpcSerialization.RpcSerialization, RpcSerialization.ndjson)
  )
  const plain = yield* RpcServer.makeProtocolWithHttpEffect().pipe(
    Effect.provideService(RpcSerialization.RpcSerialization, plainJson)
  )
  const router = yield* HttpRouter.HttpRouter
  yield* router.add("POST", "/rpc", Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    sendsNdjson(request) ? framed.httpEffect : plain.httpEffect))
  return Layer.merge(serverOn(framed.protocol), serverOn(plain.protocol))
}))

/** Serves `ServiceRpcs` on the application's HttpRouter, on every transport and serialisation. */
export const RpcLayer = Layer.mergeAll(HttpJsonRoutes, serve("/rpc/binary"), serve("/rpc/ws"), serve("/rpc/ws/binary"),
  serve("/rpc/msgpack"), serve("/rpc/ws/msgpack")).pipe(
  Layer.provide([ServiceHandlersLayer, RpcAuthLayer]),
  Layer.provide(RpcCredentials.layer),
  Layer.provide(RpcCredentialsRepo.layer)
)
