/** The identifiers a customer is resolved by (besides `external_id`, its `customer_key`). */
export type IdentifierKind = "crm_contact_id" | "national_id" | "email" | "phone" | "anonymous_id"
