/**
 * What other contexts ask of identity while they record outcomes, touches and conversations, as
 * identity's service: finding and creating the customer an outcome is about, attaching its
 * identifiers, locking the customers it changes, and raising merge proposals. Each method is its repository's statement
 * (documented there), so an ingestion service composes them in its own transaction at no extra
 * round trip: they run on the caller's SqlClient, inside whatever transaction it holds.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { CustomersRepo } from "./customers/repo.ts"
import { IdentityRepo } from "./repo.ts"
import { traced } from "../platform/traced.ts"

// The input and row types of these statements, for the callers that build or read them.
import type { IdentifierKind } from "./customers/repo.ts"
export type { IdentifierKind, KnownCustomer, NewIdentifier } from "./customers/repo.ts"

type Customers = CustomersRepo["Service"]

export class IdentityIntake extends Context.Service<IdentityIntake, {
  // Customers and their identifiers (src/identity/customers/repo.ts).
  readonly customerByKey: Customers["customerByKey"]
  readonly customersByKey: Customers["customersByKey"]
  readonly liveCustomerByIdentifier: Customers["liveCustomerByIdentifier"]
  readonly oldestHolders: Customers["oldestHolders"]
  readonly lockIdentifierValues: Customers["lockIdentifierValues"]
  readonly createKeylessCustomers: Customers["createKeylessCustomers"]
  readonly customerKeys: Customers["customerKeys"]
  readonly lockCustomers: Customers["lockCustomers"]
  readonly addIdentifiers: Customers["addIdentifiers"]
  /**
   * Gives the customer (or the survivor it was merged into) an identifier, in the caller's
   * transaction; answers that survivor, none when the customer was erased (then nothing is added).
   */
  readonly attachIdentifier: (
    profileId: string,
    customerId: string,
    kind: IdentifierKind,
    value: string
  ) => Effect.Effect<Option.Option<string>, DatabaseUnavailable>
  /** An identifier now held by two live customers raises a proposal (src/identity/repo.ts). */
  readonly proposeMerges: IdentityRepo["Service"]["proposeMerges"]
}>()("svc/IdentityIntake") {
  static readonly layer = Layer.effect(IdentityIntake)(
    Effect.gen(function*() {
      const customers = yield* CustomersRepo
      const identity = yield* IdentityRepo
      return {
        customerByKey: traced("IdentityIntake.customerByKey", customers.customerByKey),
        customersByKey: traced("IdentityIntake.customersByKey", customers.customersByKey),
        liveCustomerByIdentifier: traced("IdentityIntake.liveCustomerByIdentifier", customers.liveCustomerByIdentifier),
        oldestHolders: traced("IdentityIntake.oldestHolders", customers.oldestHolders),
        lockIdentifierValues: traced("IdentityIntake.lockIdentifierValues", customers.lockIdentifierValues),
        createKeylessCustomers: traced("IdentityIntake.createKeylessCustomers", customers.createKeylessCustomers),
        customerKeys: traced("IdentityIntake.customerKeys", customers.customerKeys),
        lockCustomers: traced("IdentityIntake.lockCustomers", customers.lockCustomers),
        addIdentifiers: traced("IdentityIntake.addIdentifiers", customers.addIdentifiers),
        proposeMerges: traced("IdentityIntake.proposeMerges", identity.proposeMerges),
        attachIdentifier: Effect.fn("IdentityIntake.attachIdentifier")(function*(
          profileId: string,
          customerId: string,
          kind: IdentifierKind,
          value: string
        ) {
          // A merged customer's identifiers belong to its survivor; an erased one takes none.
          const survivor = yield* customers.survivorOf(profileId, customerId)
          if (Option.isSome(survivor)) yield* customers.addIdentifiers([{ profileId, customerId: survivor.value, kind, value }])
          return survivor
        })
      }
    })
  ).pipe(Layer.provide([CustomersRepo.layer, IdentityRepo.layer]))
}
