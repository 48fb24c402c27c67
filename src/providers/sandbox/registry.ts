/**
 * Every sandbox provider served under `/sandbox/<provider>/`: the kinds with a world of their
 * own (add yours to DEDICATED, see kind.ts), the rest generic (generic.ts).
 */
import { PROVIDER_KINDS } from "../registry.ts"
import { adplatformSandbox } from "./adplatform.ts"
import { genericSandbox } from "./generic.ts"
import type { SandboxKind } from "./kind.ts"

const DEDICATED: ReadonlyArray<SandboxKind> = [adplatformSandbox]

export const SANDBOX_KINDS: ReadonlyArray<SandboxKind> = PROVIDER_KINDS.map((provider) =>
  DEDICATED.find((kind) => kind.provider === provider) ?? genericSandbox(provider)
)
