/**
 * A query parameter refused by a rule across parameters (one filter at a time, `days` not with
 * `start`): 400 `invalid_parameter` naming it, as the contract's own decoding names a parameter
 * it refuses alone (`schema/query.ts`, `schema-errors.ts`).
 */
import { InvalidParameter } from "./errors.ts"

export const invalidQuery = (name: string, message: string) =>
  new InvalidParameter({ message: `query.${name}: ${message}`, reason: `invalid_parameter:${name}` })
