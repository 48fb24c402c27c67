/**
 * A service method that is one repository statement: the statement under the service's span
 * (`Effect.fn(name)`), for the services other contexts call instead of that repository.
 */
import { Effect } from "effect"

export const traced = <Args extends ReadonlyArray<unknown>, A, E>(name: string, statement: (...args: Args) => Effect.Effect<A, E>) =>
  Effect.fn(name)(function*(...args: Args) {
    return yield* statement(...args)
  })
