/** Query parameters that services read as text and check themselves (400 `invalid_parameter` naming the parameter). */
import { Effect } from "effect"
import { InvalidParameter } from "../../schema/errors.ts"

export const invalidQuery = (name: string, message: string) =>
  new InvalidParameter({ message: `query.${name}: ${message}`, reason: `invalid_parameter:${name}` })

/** An integer parameter from `min` to `max` (`limit`, `offset`): `fallback` when absent, else 400 naming it. */
export const integerParam = (
  name: string,
  raw: string | undefined,
  bounds: { readonly fallback: number; readonly min: number; readonly max: number }
): Effect.Effect<number, InvalidParameter> => {
  if (raw === undefined) return Effect.succeed(bounds.fallback)
  const parsed = /^\d{1,9}$/.test(raw) ? Number(raw) : Number.NaN
  return parsed >= bounds.min && parsed <= bounds.max
    ? Effect.succeed(parsed)
    : Effect.fail(invalidQuery(name, `Expected an integer from ${bounds.min} to ${bounds.max}, got ${JSON.stringify(raw)}`))
}
