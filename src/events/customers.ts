/**
 * Who an outcome or a touch is about: the customer named by the sender's own id
 * (`external_id`, the `customer_key`), else by email, else by phone. Shared by server-side
 * events (decision 0029) and partner data (decision 0033), so both bind people the same way.
 */
import { Effect, Option } from "effect"
import type { EventsRepo } from "./repo.ts"

export interface CustomerTraits {
  /** The sender's own customer id (`customer_key`). */
  readonly externalId: string | null
  /** Lower-cased and trimmed. */
  readonly email: string | null
  /** Trimmed, as given. */
  readonly phone: string | null
}

type Repo = EventsRepo["Service"]

/**
 * The customer of an ingest: by `external_id` (created when new, race-safe), else by email,
 * else by phone, else a new customer without a key when an email or a phone was given. The
 * customer is row-locked until the transaction ends and holds the email and phone as
 * identifiers afterwards. Null when the traits name nobody. Runs in the caller's transaction.
 */
export const resolveCustomer = Effect.fn("Customers.resolve")(function*(repo: Repo, profileId: string, traits: CustomerTraits) {
  let customerId: string | null = null
  if (traits.externalId !== null) customerId = yield* repo.customerByKey(profileId, traits.externalId)
  if (customerId === null && traits.email !== null) {
    customerId = Option.getOrNull(yield* repo.customerByIdentifier(profileId, "email", traits.email))
  }
  if (customerId === null && traits.phone !== null) {
    customerId = Option.getOrNull(yield* repo.customerByIdentifier(profileId, "phone", traits.phone))
  }
  if (customerId === null && (traits.email !== null || traits.phone !== null)) {
    customerId = yield* repo.createKeylessCustomer(profileId)
  }
  if (customerId === null) return null
  yield* repo.lockCustomer(customerId)
  if (traits.email !== null) yield* repo.addIdentifier(profileId, customerId, "email", traits.email)
  if (traits.phone !== null) yield* repo.addIdentifier(profileId, customerId, "phone", traits.phone)
  return customerId
})

/**
 * Read-only: the live customer `resolveCustomer` would pick now, if it exists already (an
 * unknown `external_id` names a customer that does not exist yet: none, never a fallback to
 * the email or phone). Writes nothing.
 */
export const findCustomer = Effect.fn("Customers.find")(function*(repo: Repo, profileId: string, traits: CustomerTraits) {
  if (traits.externalId !== null) return yield* repo.findCustomerByKey(profileId, traits.externalId)
  if (traits.email !== null) {
    const byEmail = yield* repo.customerByIdentifier(profileId, "email", traits.email)
    if (Option.isSome(byEmail)) return byEmail
  }
  if (traits.phone !== null) return yield* repo.customerByIdentifier(profileId, "phone", traits.phone)
  return Option.none<string>()
})
