/**
 * Who an outcome or a touch is about: the customer named by the sender's own id
 * (`external_id`, the `customer_key`), else by one of its identifiers, strongest first. Shared
 * by server-side events (decision 0029) and partner data (decision 0033), so both bind people
 * the same way. Identifier values arrive normalised (src/identity/normalize.ts).
 */
import { Effect, Option } from "effect"
import type { Conversions } from "../../attribution/conversions/service.ts"
import type { Touches } from "../../attribution/touches/service.ts"
import type { IdentifierKind, IdentityIntake, KnownCustomer, NewIdentifier } from "../../identity/intake.ts"
import { profileScoped } from "../../kernel/profile-scoped.ts"

export interface CustomerTraits {
  /** The sender's own customer id (`customer_key`). */
  readonly externalId: string | null
  /** Lower-cased and trimmed. */
  readonly email: string | null
  /** E.164. */
  readonly phone: string | null
  /** The sender's CRM contact id. */
  readonly crmContactId?: string | null
  /** The keyed hash of the national id (the id itself is never stored). */
  readonly nationalIdHash?: string | null
  /** The web tracker's anonymous id of the person's browser. */
  readonly anonymousId?: string | null
}

/** Lookup order of a request without `external_id`: the first kind that names a customer decides. */
export const RESOLUTION_ORDER: ReadonlyArray<IdentifierKind> = ["crm_contact_id", "national_id", "email", "phone", "anonymous_id"]

const valueOf = (traits: CustomerTraits, kind: IdentifierKind): string | null => {
  switch (kind) {
    case "crm_contact_id":
      return traits.crmContactId ?? null
    case "national_id":
      return traits.nationalIdHash ?? null
    case "email":
      return traits.email
    case "phone":
      return traits.phone
    case "anonymous_id":
      return traits.anonymousId ?? null
  }
}

/**
 * The services a resolution reads and writes through: identity's (customers and identifiers,
 * merge proposals) and attribution's (touches, conversions).
 */
export interface ResolutionServices {
  readonly identity: IdentityIntake["Service"]
  readonly touches: Touches["Service"]
  readonly conversions: Conversions["Service"]
}

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
 * after the other would: by `external_id` (created when new, race-safe), else by the first of
 * `RESOLUTION_ORDER` the request carries that a live customer holds (the oldest holder,
 * counting what earlier requests attached), else a new customer without a key when any
 * identifier was given. Every customer found is row-locked until the transaction ends and holds
 * its request's identifiers afterwards; an identifier now held by two live customers raises a
 * merge proposal, never a merge. Null where the traits name nobody. A fixed number of
 * statements, however many requests: the server-side ingest resolves a whole batch at once.
 */
export const resolveCustomers = Effect.fn("Customers.resolve")(function*(
  services: ResolutionServices,
  requests: ReadonlyArray<CustomerRequest>
) {
  const { identity: customers, touches, conversions } = services
  const keyed = yield* customers.customersByKey(
    requests.flatMap(({ profileId, traits }) => (traits.externalId === null ? [] : [{ profileId, name: traits.externalId }]))
  )
  const unkeyed = requests.filter((request) => request.traits.externalId === null)
  const holders = new Map<IdentifierKind, ReadonlyMap<string, KnownCustomer>>()
  for (const kind of RESOLUTION_ORDER) {
    const values = unkeyed.flatMap(({ profileId, traits }) => {
      const value = valueOf(traits, kind)
      return value === null ? [] : [{ profileId, name: value }]
    })
    // Nothing to call for a kind no request carries (a batch keyed by external_id carries none).
    if (values.length === 0) continue
    // A request without a key may create a customer for its identifiers: concurrent
    // resolutions by the same value take turns, so only the first creates one.
    yield* customers.lockIdentifierValues(kind, values)
    holders.set(kind, yield* customers.oldestHolders(kind, values))
  }
  // Identifiers attached by earlier requests of this call, and the customers created by it.
  const attached = new Map<string, KnownCustomer>()
  const created: Array<{ readonly id: string; readonly profileId: string }> = []
  const identifiers: Array<NewIdentifier> = []
  const holderOf = (kind: IdentifierKind, profileId: string, value: string | null) => {
    if (value === null) return undefined
    const key = profileScoped(profileId, value)
    return older(holders.get(kind)?.get(key), attached.get(`${kind}\u0000${key}`))
  }
  const resolved = requests.map(({ profileId, traits }) => {
    let customer = traits.externalId === null ? undefined : keyed.get(profileScoped(profileId, traits.externalId))
    if (traits.externalId === null) {
      for (const kind of RESOLUTION_ORDER) {
        customer = holderOf(kind, profileId, valueOf(traits, kind))
        if (customer !== undefined) break
      }
      if (customer === undefined && RESOLUTION_ORDER.some((kind) => valueOf(traits, kind) !== null)) {
        customer = { id: crypto.randomUUID(), created_at: NEWEST }
        created.push({ id: customer.id, profileId })
      }
    }
    if (customer === undefined) return null
    for (const kind of RESOLUTION_ORDER) {
      const value = valueOf(traits, kind)
      if (value === null) continue
      identifiers.push({ profileId, customerId: customer.id, kind, value })
      const key = `${kind}\u0000${profileScoped(profileId, value)}`
      attached.set(key, older(attached.get(key), customer) ?? customer)
    }
    return customer.id
  })
  // Each call below is skipped when it has nothing to do (a batch keyed by external_id has no
  // identifiers): a call is a span and a fiber step even when its statement is skipped.
  if (created.length > 0) yield* customers.createKeylessCustomers(created)
  const found = requests.flatMap(({ profileId }, index) => {
    const id = resolved[index] ?? null
    return id === null ? [] : [{ id, profileId }]
  })
  if (found.length > 0) yield* customers.lockCustomers(found)
  if (identifiers.length === 0) return resolved
  yield* customers.addIdentifiers(identifiers)
  // An identifier now held by two live customers never merges them: it raises a proposal.
  yield* customers.proposeMerges(identifiers)
  // The browsers named by anonymous id: their unbound touches join the person, and the
  // conversions of the customers that got one are credited again.
  const visitors = identifiers.flatMap((identifier) =>
    identifier.kind === "anonymous_id"
      ? [{ profileId: identifier.profileId, anonymousId: identifier.value, customerId: identifier.customerId }]
      : []
  )
  if (visitors.length === 0) return resolved
  const bound = yield* touches.bindVisitors(visitors)
  yield* conversions.recreditCustomers(bound)
  return resolved
})

/** `resolveCustomers` for one request. */
export const resolveCustomer = (services: ResolutionServices, profileId: string, traits: CustomerTraits) =>
  Effect.map(resolveCustomers(services, [{ profileId, traits }]), (ids) => ids[0] ?? null)

/**
 * Read-only: the live customer `resolveCustomer` would pick now, if it exists already (an
 * unknown `external_id` names a customer that does not exist yet: none, never a fallback to
 * the email or phone). Writes nothing.
 */
export const findCustomer = Effect.fn("Customers.find")(function*(
  customers: IdentityIntake["Service"],
  profileId: string,
  traits: CustomerTraits
) {
  if (traits.externalId !== null) return yield* customers.customerByKey(profileId, traits.externalId)
  for (const kind of RESOLUTION_ORDER) {
    const value = valueOf(traits, kind)
    if (value === null) continue
    const found = yield* customers.liveCustomerByIdentifier(profileId, kind, value)
    if (Option.isSome(found)) return found
  }
  return Option.none<string>()
})
