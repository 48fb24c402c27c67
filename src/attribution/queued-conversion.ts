import { Schema } from "effect"

/**
 * A conversion's place in `credit_queue`: its whole key, the queue's primary key (`occurred_at` as
 * PostgreSQL writes it). What the crediting worker reads off the queue and the conversions
 * repository takes a row out by (decision 0152): by its id alone, no index of the queue answers.
 */
export const QueuedConversion = Schema.Struct({ id: Schema.String, profile_id: Schema.String, occurred_at: Schema.String })
export type QueuedConversion = typeof QueuedConversion.Type
