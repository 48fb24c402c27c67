/** Keyset cursors: opaque to clients, `(created_at, id)` inside. */
import { Effect, Option } from "effect"
import type { InvalidParameter } from "../../schema/errors.ts"
import { invalidQuery } from "../../schema/query-errors.ts"
import { parseJsonOrUndefined } from "./json.ts"

export interface Keyset {
  readonly createdAt: string
  readonly id: string
}

export const encodeCursor = (keyset: Keyset): string =>
  Buffer.from(JSON.stringify([keyset.createdAt, keyset.id]), "utf8").toString("base64url")

/** The keyset inside a cursor, None when unreadable; lists take theirs through `parseCursor` or `keysetCursor`. */
export const decodeCursor = (cursor: string | undefined): Option.Option<Keyset> => {
  if (cursor === undefined || cursor === "") return Option.none()
  const parsed = parseJsonOrUndefined(Buffer.from(cursor, "base64url").toString("utf8"))
  if (Array.isArray(parsed) && parsed.length === 2 && typeof parsed[0] === "string" && typeof parsed[1] === "string") {
    return Option.some({ createdAt: parsed[0], id: parsed[1] })
  }
  return Option.none()
}

/**
 * A list's `cursor` parameter where a cursor it did not answer is refused rather than restarted:
 * none when absent or empty; the keyset when it decodes and `valid` accepts it; otherwise
 * `refusal` (by default 400 `invalid_parameter:cursor`, "Not a cursor this list answered").
 */
export const parseCursor = (
  cursor: string | undefined,
  valid: (keyset: Keyset) => boolean,
  refusal: () => InvalidParameter = () => invalidQuery("cursor", "Not a cursor this list answered; start again without it")
): Effect.Effect<Option.Option<Keyset>, InvalidParameter> => {
  if (cursor === undefined || cursor === "") return Effect.succeed(Option.none())
  const keyset = Option.filter(decodeCursor(cursor), valid)
  return Option.isSome(keyset) ? Effect.succeed(keyset) : Effect.fail(refusal())
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A `(created_at, id)` keyset as `toPage` writes it: a timestamp and a UUID. */
export const isTimestampKeyset = (keyset: Keyset): boolean =>
  UUID.test(keyset.id) && /^\d{4}-\d{2}-\d{2}[T ]/.test(keyset.createdAt) && !Number.isNaN(Date.parse(keyset.createdAt))

/**
 * The `cursor` of a list keyed by `(created_at, id)`: none when absent; 400
 * `invalid_parameter:cursor` for one this list did not answer. Restarting from the first page
 * instead would send a client that follows a damaged cursor round the same pages forever, and
 * a readable keyset of nonsense must not reach the SQL.
 */
export const keysetCursor = (cursor: string | undefined): Effect.Effect<Option.Option<Keyset>, InvalidParameter> =>
  parseCursor(cursor, isTimestampKeyset)

export const DEFAULT_PAGE_SIZE = 50

/**
 * A keyset page fetched with one more row than it holds (the extra row says whether there is a
 * next page): the rows to answer, and the pagination whose cursor is `keyOf` the last of them.
 */
export const pageOf = <Row>(rows: ReadonlyArray<Row>, limit: number, keyOf: (row: Row) => Keyset) => {
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  const hasNext = rows.length > limit && last !== undefined
  return { page, pagination: { has_next: hasNext, cursor: hasNext ? encodeCursor(keyOf(last)) : null } }
}

/** `pageOf` for rows keyed by `(created_at, id)`, rendered. */
export const toPage = <Row extends { readonly created_at: string; readonly id: string }, Item>(
  rows: ReadonlyArray<Row>,
  limit: number,
  render: (row: Row) => Item
) => {
  const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: row.created_at, id: row.id }))
  return { data: page.map(render), pagination }
}
