/** The Connections screen lists every provider kind the API connects (decision 0134): no more, no fewer. */
import { assert, describe, it } from "@effect/vitest"
import { PROVIDERS } from "../../src/console/web/providers.ts"
import { PROVIDER_KINDS } from "../../src/connections/providers/registry.ts"

describe("console providers", () => {
  it("the screen's provider list is the registry's", () => {
    assert.deepStrictEqual(PROVIDERS.map((provider) => provider.kind).toSorted(), [...PROVIDER_KINDS].toSorted())
  })
})
