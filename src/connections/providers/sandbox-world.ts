/**
 * Sandbox worlds (decision 0109): each profile has its own simulated provider accounts, grants,
 * arrivals and faults, as a test-mode account has at a payment provider. A world is named on the
 * wire by a handle `<profile id>.<mac>`: the service puts it on a consent link
 * (`sandbox_world`) and the sandbox on every push (`X-Sandbox-World`), so the sandbox knows whose
 * world a consent belongs to and `/hooks/{provider}` whose tenants a push may reach. The mac is a
 * keyed hash under the service's secrets key: a caller cannot name another profile's world.
 */
import { timingSafeEqual } from "node:crypto"

/** The query parameter of a consent link that names the world. */
export const SANDBOX_WORLD_PARAM = "sandbox_world"
/** The header a sandbox push names its world in. */
export const SANDBOX_WORLD_HEADER = "x-sandbox-world"

const PURPOSE = "sandbox-world"
const MAC_LENGTH = 32
const PROFILE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export interface SandboxWorlds {
  /** The handle of a profile's world. */
  readonly handle: (profileId: string) => string
  /** The profile a handle names, or undefined when it is malformed or its mac does not match. */
  readonly profileOf: (handle: string) => string | undefined
}

/** World handles keyed by `keyedHash` (SecretBox's, so every runner sharing the secrets key agrees). */
export const sandboxWorlds = (keyedHash: (purpose: string, value: string) => string): SandboxWorlds => {
  const mac = (profileId: string) => keyedHash(PURPOSE, profileId).slice(0, MAC_LENGTH)
  return {
    handle: (profileId) => `${profileId}.${mac(profileId)}`,
    profileOf: (handle) => {
      const dot = handle.indexOf(".")
      const profileId = handle.slice(0, dot)
      const given = Buffer.from(handle.slice(dot + 1), "utf8")
      if (dot < 0 || !PROFILE_ID.test(profileId) || given.length !== MAC_LENGTH) return undefined
      return timingSafeEqual(given, Buffer.from(mac(profileId), "utf8")) ? profileId : undefined
    }
  }
}

/** Whether a string is shaped as a profile id (a UUID in lower case). */
export const isProfileId = (value: string) => PROFILE_ID.test(value)
