/**
 * Sandbox worlds in tests (decision 0109): every profile has its own simulated providers. A
 * profile's test controls (`_state`, `_faults`) open with its API key; a test of the sandbox
 * itself, with no profile, acts on a world of its own through the operator token and
 * `?profile_id=`, and names that world on its consent links (`sandbox_world`).
 */
import { SecretBox } from "../../src/platform/secret-box.ts"
import { SANDBOX_WORLD_PARAM, sandboxWorlds } from "../../src/connections/providers/sandbox-world.ts"
import { OPERATOR_TOKEN, TEST_SECRETS_KEY } from "./app.ts"

const worlds = sandboxWorlds(SecretBox.make(Buffer.from(TEST_SECRETS_KEY, "base64")).keyedHash)

/** The handle a consent link names a profile's world by. */
export const worldHandle = (profileId: string) => worlds.handle(profileId)

/** Adds `sandbox_world=<handle>` to a consent URL. */
export const withWorld = (authorizeUrl: string, profileId: string) => {
  const url = new URL(authorizeUrl)
  url.searchParams.set(SANDBOX_WORLD_PARAM, worldHandle(profileId))
  return url.toString()
}

/** The headers that open a profile's world with its API key. */
export const keyAuth = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` })

/** A test-control path and headers for the operator acting on `profileId`'s world. */
export const asOperator = (path: string, profileId: string) => ({
  path: `${path}${path.includes("?") ? "&" : "?"}profile_id=${profileId}`,
  headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } as Record<string, string>
})
