/**
 * Who an outcome or a touch is about: the customer named by the sender's own id
 * (`external_id`, the `customer_key`), else by email, else by phone. Shared by server-side
 * events (decision 0029) and partner data (decision 0033), so both bind people the same way.
 */
import { Effect, Option } from "effect"
import { type EventsRepo, type KnownCustomer, type NewIdentifier, profileScoped } from "./repo.ts"

export interface CustomerTraits {
  /** The sender's own customer id (`customer_key`). */
  readonly externalId: string | null
  /** Lower-cased and trimmed. */
  readonly email: string | null
  /** Trimmed, as given. */
  readonly phone: string | null
}

type Repo = EventsRepo["Service"]

export interface CustomerRequest {
  readonly profileId: string
  readonly traits: CustomerTraits
}

/** A customer created by this resolution sorts after every stored one (it is the newest). */
const NEWEST = "~"

const older = (a: KnownCustomer | undefined, b: KnownCustomer | undefined) =>
  a === undefined ? b : b === undefined ? a : a.created_at < b.created_at || (a.created_at === b.created_at && a.id < b.id) ? a : b

/**
 * The customer of each request, in the caller's transaction, answering what resolving them one
 * after the other would: by `external_id` (created when new, race-safe), else by email, else by
 * phone (the oldest live customer holding it, counting what earlier requests attached), else a
 * new customer without a key when an email or a phone was given. Every customer found is
 * row-locked until the transaction ends and holds its request's email and phone as identifiers
 * afterwards. Null where the traits name nobody. A fixed number of statements, however many
 * requests: the server-side ingest resolves a whole batch at once.
 */
export const resolveCustomers = Effect.fn("Customers.resolve")(function*(
  repo: Repo,
  requests: ReadonlyArray<CustomerRequest>
) {
  const keyed = yield* repo.customersByKey(
    requests.flatMap(({ profileId, traits }) => (traits.externalId === null ? [] : [{ profileId, name: traits.externalId }]))
  )
  const unkeyed = requests.filter((request) => request.traits.externalId === null)
  const lookups = (kind: "email" | "phone") =>
    unkeyed.flatMap(({ profileId, traits }) => {
      const value = traits[kind]
      return value === null ? [] : [{ profileId, name: value }]
    })
  const emails = lookups("email")
  const phones = lookups("phone")
  // A request without a key may create a customer for its email or phone: concurrent
  // resolutions by the same value take turns, so only the first creates one.
  yield* repo.lockIdentifierValues("email", emails)
  yield* repo.lockIdentifierValues("phone", phones)
  const holders = {
    email: yield* repo.oldestHolders("email", emails),
    phone: yield* repo.oldestHolders("phone", phones)
  }
  // Identifiers attached by earlier requests of this call, and the customers created by it.
  const attached = { email: new Map<string, KnownCustomer>(), phone: new Map<string, KnownCustomer>() }
  const created: Array<{ readonly id: string; readonly profileId: string }> = []
  const identifiers: Array<NewIdentifier> = []
  const holderOf = (kind: "email" | "phone", profileId: string, value: string | null) => {
    if (value === null) return undefined
    const key = profileScoped(profileId, value)
    return older(holders[kind].get(key), attached[kind].get(key))
  }
  const resolved = requests.map(({ profileId, traits }) => {
    let customer = traits.externalId === null ? undefined : keyed.get(profileScoped(profileId, traits.externalId))
    if (traits.externalId === null) {
      customer = holderOf("email", profileId, traits.email) ?? holderOf("phone", profileId, traits.phone)
      if (customer === undefined && (traits.email !== null || traits.phone !== null)) {
        customer = { id: crypto.randomUUID(), created_at: NEWEST }
        created.push({ id: customer.id, profileId })
      }
    }
    if (customer === undefined) return null
    for (const kind of ["email", "phone"] as const) {
      const value = traits[kind]
      if (value === null) continue
      identifiers.push({ profileId, customerId: customer.id, kind, value })
      const key = profileScoped(profileId, value)
      attached[kind].set(key, older(attached[kind].get(key), customer) ?? customer)
    }
    return customer.id
  })
  yield* repo.createKeylessCustomers(created)
  yield* repo.lockCustomers(resolved.filter((id) => id !== null))
  yield* repo.addIdentifiers(identifiers)
  // An identifier now held by two live customers never merges them: it raises a proposal.
  yield* repo.proposeMerges(identifiers)
  return resolved
})

/** `resolveCustomers` for one request. */
export const resolveCustomer = (repo: Repo, profileId: string, traits: CustomerTraits) =>
  Effect.map(resolveCustomers(repo, [{ profileId, traits }]), (ids) => ids[0] ?? null)

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
