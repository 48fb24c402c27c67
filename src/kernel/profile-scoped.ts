/**
 * Keys of batches that span profiles (idempotency keys, customer keys, event names, identifier
 * values): every context that batches by them builds its maps and lock orders the same way.
 */

/** One map key for a pair of a profile and a name (an idempotency key, a customer key, an identifier). */
export const profileScoped = (profileId: string, name: string) => `${profileId}\u0000${name}`

export interface ProfileScoped {
  readonly profileId: string
  readonly name: string
}

/** Code-unit order: any fixed order does, as long as every batch locks in the same one. */
export const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
