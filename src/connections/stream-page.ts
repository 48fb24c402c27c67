/**
 * A page of a provider's list that the port streams whole (email threads, calendars, events):
 * the items after the one the cursor names, `limit` of them. The cursor is the last item's id,
 * opaque to clients; one the provider no longer lists is 400 `invalid_parameter`, so a client
 * never silently restarts from the top.
 */
import { Effect, Option, Stream } from "effect"
import { InvalidParameter } from "../../schema/errors.ts"

export interface StreamPage<A> {
  readonly data: ReadonlyArray<A>
  readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
}

const encode = (id: string) => Buffer.from(id, "utf8").toString("base64url")
const decode = (cursor: string) => Buffer.from(cursor, "base64url").toString("utf8")

export const streamPage = <A extends { readonly id: string }, E, R>(
  stream: Stream.Stream<A, E, R>,
  limit: number,
  cursor: string | undefined
): Effect.Effect<StreamPage<A>, E | InvalidParameter, R> =>
  Effect.gen(function*() {
    const after = cursor === undefined || cursor === "" ? Option.none<string>() : Option.some(decode(cursor))
    const rest = Option.isNone(after)
      ? stream
      : stream.pipe(Stream.dropWhile((item) => item.id !== after.value), Stream.drop(1))
    // One item over the page tells whether there is a next one.
    const taken = Array.from(yield* Stream.runCollect(Stream.take(rest, limit + 1)))
    if (Option.isSome(after) && taken.length === 0) {
      // Either the cursor's item is gone or it was the last: tell them apart by looking for it.
      const present = yield* Stream.runHead(Stream.filter(stream, (item) => item.id === after.value))
      if (Option.isNone(present)) {
        return yield* new InvalidParameter({ message: "cursor: not a cursor of this list; start again without one.", reason: "cursor" })
      }
    }
    const data = taken.slice(0, limit)
    const last = data.at(-1)
    const hasNext = taken.length > limit
    return { data, pagination: { has_next: hasNext, cursor: hasNext && last !== undefined ? encode(last.id) : null } }
  })
