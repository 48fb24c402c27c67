/**
 * The published OpenAPI document, as the composition root assembles it from every context's
 * contract. The ops surface serves it through this service, so it does not import the root.
 */
import { Context } from "effect"

export class PublishedDocument extends Context.Service<PublishedDocument, {
  /** The document serialised once (about 1 MB; it never changes while running). */
  readonly json: () => string
}>()("svc/PublishedDocument") {}
