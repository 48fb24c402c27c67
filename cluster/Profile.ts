/** The Profile entity's behaviour (src/accounts/profiles/entity.ts is its protocol). */
import { Effect, Layer } from "effect"
import { Entity } from "effect/cluster"
import { Profile } from "../src/accounts/profiles/entity.ts"
import { AppConfig } from "../src/platform/config.ts"
import { CurrentRequestId } from "../src/platform/request-id.ts"
import { Entitlements } from "../src/accounts/entitlements/service.ts"
import { type ProfileRecord, ProfileRepo } from "./profile-repo.ts"
import type { ProfileState } from "../schema/rpc.ts"

/** Registers the Profile behaviour with Sharding. */
export const ProfileLayer = Profile.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const runner = yield* Entity.CurrentRunnerAddress
    const { cluster } = yield* AppConfig
    const repo = yield* ProfileRepo
    const entitlements = yield* Entitlements
    const profileId = address.entityId
    const servedBy = cluster.mode === "single" ? "single" : `${runner.host}:${runner.port}`
    const serve = (record: ProfileRecord): ProfileState => ({ ...record, served_by: servedBy })

    return Profile.of({
      GetState: () => Effect.map(repo.find(profileId), serve),
      BumpRevocationEpoch: () => Effect.map(repo.bumpRevocationEpoch(profileId), serve),
      SetEntitlement: ({ payload }) =>
        entitlements.setAttribution(
          { kind: "app_client", appId: payload.app_id, clientId: payload.client_id, rateLimitPerMinute: 0 },
          profileId,
          {
            enabled: payload.enabled,
            ...(payload.privacy_mode === undefined ? {} : { privacy_mode: payload.privacy_mode }),
            ...(payload.as_of === undefined ? {} : { as_of: payload.as_of })
          },
          payload.service_credential_id
        ).pipe(Effect.provideService(CurrentRequestId, payload.request_id))
    })
  })
).pipe(Layer.provide([ProfileRepo.layer, Entitlements.layer]))
