/**
 * Customers, journeys and erasure over HTTP (decision 0038). The person reads (`/customers`,
 * `/customers/{id}/journey`, `/visitors`) are heavy (3 units) and always write the PII access
 * log; the two journeys by conversion and by key are projected unless the caller holds
 * `customers:read`, and then the service logs them.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  ConversionJourney,
  ConversionJourneyParams,
  CreateErasure,
  CustomerIdParams,
  CustomerPage,
  CustomersQuery,
  ErasureAnswer,
  ErasureIdParams,
  JourneyPageQuery,
  PersonJourney,
  PersonJourneyQuery,
  VisitorPage
} from "../../../schema/customers.ts"
import {
  ApiKeyRequired,
  ConversionNotFound,
  CustomerNotFound,
  ErasureNotFound,
  InvalidParameter,
  InvalidState,
  profileErrors,
  ValidationError
} from "../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const common = [...profileErrors, InvalidParameter.wire] as const

const projected = policy({ scopes: ["conversions:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })
const personRead = (scope: "customers:read" | "visitors:read") =>
  policy({ scopes: [scope], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none", cost: 3, personData: true })

export const CustomersApi = HttpApiGroup.make("customers")
  .add(
    HttpApiEndpoint.get("conversionJourney", "/conversions/:id/journey", {
      params: ConversionJourneyParams,
      query: JourneyPageQuery,
      success: ConversionJourney,
      error: [...common, ConversionNotFound.wire, InvalidState.wire]
    })
      .annotate(
        OpenApi.Summary,
        "A conversion's journey: the person's touches up to it, oldest first, with this conversion's credit under `model`; projected rows without customers:read"
      )
      .annotateMerge(projected),
    HttpApiEndpoint.get("personJourney", "/customers/journey", {
      query: PersonJourneyQuery,
      success: PersonJourney,
      error: [...common, CustomerNotFound.wire]
    })
      .annotate(
        OpenApi.Summary,
        "Every touch and outcome of a person (by customer_key; by email or phone with customers:read), oldest first; merged customers resolve to the survivor"
      )
      .annotateMerge(projected),
    HttpApiEndpoint.get("listCustomers", "/customers", {
      query: CustomersQuery,
      success: CustomerPage,
      error: common
    })
      .annotate(OpenApi.Summary, "The profile's customers with their identifiers and counts, newest first (heavy: 3 units)")
      .annotateMerge(personRead("customers:read")),
    HttpApiEndpoint.get("customerJourney", "/customers/:id/journey", {
      params: CustomerIdParams,
      query: JourneyPageQuery,
      success: PersonJourney,
      error: [...common, CustomerNotFound.wire]
    })
      .annotate(OpenApi.Summary, "A customer's full journey by customer_profile_id (heavy: 3 units)")
      .annotateMerge(personRead("customers:read")),
    HttpApiEndpoint.get("listVisitors", "/visitors", {
      query: CustomersQuery,
      success: VisitorPage,
      error: common
    })
      .annotate(OpenApi.Summary, "Visitors (browsers by anonymous id), most recently seen first (heavy: 3 units)")
      .annotateMerge(personRead("visitors:read")),
    HttpApiEndpoint.post("createErasure", "/customers/erasures", {
      payload: CreateErasure,
      success: ErasureAnswer,
      error: [...common, ValidationError.wire, ApiKeyRequired.wire, CustomerNotFound.wire]
    })
      .annotate(
        OpenApi.Summary,
        "Erase a customer (API key only): personal data deleted, conversions kept without a person; the same request_ref answers the original receipt"
      )
      .annotateMerge(policy({ scopes: ["attribution:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })),
    HttpApiEndpoint.get("getErasure", "/customers/erasures/:erasure_id", {
      params: ErasureIdParams,
      success: ErasureAnswer,
      error: [...common, ErasureNotFound.wire]
    })
      .annotate(OpenApi.Summary, "An erasure receipt")
      .annotateMerge(policy({ scopes: ["attribution:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" }))
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Customers, journeys and erasure")
