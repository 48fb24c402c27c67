/** What the reference adds to one operation of the generated OpenAPI document. */
export interface OperationDoc {
  /** Markdown; used when the endpoint declares no description of its own. */
  readonly description?: string
  /** The request body example (every media type of the body); omitted: derived from the body's schema. */
  readonly request?: unknown
  /** The example of the first success status's body; omitted: derived from the response schema. */
  readonly response?: unknown
  /** Descriptions of this operation's parameters, by name (beside the shared ones in `parameters.ts`). */
  readonly parameters?: Readonly<Record<string, string>>
}

/** One API group's documentation, by operationId (`group.endpoint`). */
export type GroupDocs = Readonly<Record<string, OperationDoc>>
