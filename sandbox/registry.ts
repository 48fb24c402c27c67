/**
 * Every sandbox provider served under `/sandbox/<provider>/`: the kinds with a world of their
 * own (add yours to DEDICATED, see kind.ts), the rest generic (generic.ts).
 */
import { PROVIDER_KINDS } from "../src/connections/providers/registry.ts"
import { adplatformSandbox } from "./adplatform.ts"
import { calendarSandbox } from "./calendar.ts"
import { cardgwSandbox } from "./cardgw/definition.ts"
import { chatAppASandbox } from "./chat-app-a.ts"
import { commerceSandbox } from "./commerce/definition.ts"
import { crmSandbox } from "./crm/definition.ts"
import { emailSandbox } from "./email.ts"
import { genericSandbox } from "./generic.ts"
import type { SandboxKind } from "./kind.ts"
import { pageMessengerSandbox, shortVideoMessagingSandbox, socialDmSandbox } from "./messaging.ts"

const DEDICATED: ReadonlyArray<SandboxKind> = [
  adplatformSandbox,
  crmSandbox,
  commerceSandbox,
  cardgwSandbox,
  chatAppASandbox,
  socialDmSandbox,
  pageMessengerSandbox,
  shortVideoMessagingSandbox,
  emailSandbox,
  calendarSandbox
]

export const SANDBOX_KINDS: ReadonlyArray<SandboxKind> = PROVIDER_KINDS.map((provider) =>
  DEDICATED.find((kind) => kind.provider === provider) ?? genericSandbox(provider)
)
