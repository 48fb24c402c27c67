/**
 * The `OutcomesRecordedFeed` stream on every transport and serialisation the client offers
 * (src/rpc/client.ts): each must deliver the settled events at once, not when the stream ends
 * (the feed never ends). A client of the unframed plain-JSON HTTP protocol is refused at once.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Layer, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { RpcClient, RpcSerialization } from "effect/rpc"
import { ServiceRpcs } from "../../schema/rpc.ts"
import { credentialHeader, makeServiceClient, SERIALIZATIONS, TRANSPORTS } from "../../src/rpc/client.ts"
import { serveApp, TestServer, testSettings } from "../support/app.ts"
import { purchaseEvent, seedRpcWorld, settleOutbox } from "../support/rpc.ts"

/** Items are on the first page of the feed: they must arrive well within this. */
const DEADLINE = Duration.seconds(10)

/** A client of the unframed protocol (Content-Type: application/json), as other Effect services may hold. */
const plainJsonClient = (url: string, secret: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(Layer.merge(
      RpcClient.layerProtocolHttp({ url: `${url}/rpc` }).pipe(Layer.provide([FetchHttpClient.layer, RpcSerialization.layerJson])),
      credentialHeader(secret)
    ))
    return yield* RpcClient.make(ServiceRpcs).pipe(Effect.provideContext(context))
  })

/** Ingests two purchases, settles them, and answers their outcome event ids in order. */
const twoSettledOutcomes = Effect.fn("test.twoSettledOutcomes")(function*(url: string, world: { profileId: string; secret: string }) {
  const writer = yield* makeServiceClient({ url, credential: world.secret })
  const ids: Array<string> = []
  for (const key of ["s-1", "s-2"]) {
    ids.push((yield* writer.EventsIngest({ profile_id: world.profileId, event: purchaseEvent(key) })).data.outcome_event_id)
  }
  yield* settleOutbox(world.profileId)
  return ids
})

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("RPC streams", (it) => {
  describe("OutcomesRecordedFeed on every transport and serialisation", () => {
    for (const transport of TRANSPORTS) {
      for (const serialization of SERIALIZATIONS) {
        it.effect(`${transport} + ${serialization} delivers the settled events within ${Duration.format(DEADLINE)}`, () =>
          Effect.gen(function*() {
            const world = yield* seedRpcWorld()
            const { url } = yield* TestServer
            const ids = yield* twoSettledOutcomes(url, world)
            const rpc = yield* makeServiceClient({ url, credential: world.secret, transport, serialization })
            const items = yield* rpc.OutcomesRecordedFeed({ profile_id: world.profileId }).pipe(
              Stream.take(2),
              Stream.runCollect,
              Effect.timeoutOrElse({
                duration: DEADLINE,
                orElse: () => Effect.die(`${transport} + ${serialization}: no feed items within ${Duration.format(DEADLINE)}`)
              })
            )
            assert.deepStrictEqual(items.map((item) => item.event.data.outcome_event_id), ids)
          }))
      }
    }
  })

  describe("plain JSON over HTTP (unframed)", () => {
    it.effect("answers unary calls as before, and refuses a stream at once with a clear defect", () =>
      Effect.gen(function*() {
        const world = yield* seedRpcWorld()
        const { url } = yield* TestServer
        const ids = yield* twoSettledOutcomes(url, world)
        const rpc = yield* plainJsonClient(url, world.secret)
        const conversions = yield* rpc.ConversionsList({ profile_id: world.profileId, query: {} })
        assert.strictEqual(conversions.data.length, 2)
        const exit = yield* rpc.OutcomesRecordedFeed({ profile_id: world.profileId }).pipe(
          Stream.take(2),
          Stream.runCollect,
          Effect.timeoutOrElse({ duration: DEADLINE, orElse: () => Effect.die("plain JSON: the feed neither answered nor was refused") }),
          Effect.exit
        )
        assert.isTrue(Exit.isFailure(exit))
        const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        assert.instanceOf(defect, Error)
        assert.match(defect instanceof Error ? defect.message : "", /^OutcomesRecordedFeed is a stream: .*application\/x-ndjson/)
        // The same feed on the default client (NDJSON over HTTP) still delivers.
        const items = yield* makeServiceClient({ url, credential: world.secret }).pipe(
          Effect.flatMap((client) => client.OutcomesRecordedFeed({ profile_id: world.profileId }).pipe(Stream.take(2), Stream.runCollect))
        )
        assert.deepStrictEqual(items.map((item) => item.event.data.outcome_event_id), ids)
      }))
  })
})
