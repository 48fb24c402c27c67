/** How the contract words a decoding failure, shared by the HTTP layer and services that decode bodies themselves. */
import { SchemaIssue } from "effect"

/** Issues with one message each; an unknown key says so plainly instead of Effect's "Expected no excess property". */
export const formatContractIssues = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) =>
    issue._tag === "UnexpectedKey" ? "Unknown key: this operation does not take it" : SchemaIssue.defaultLeafHook(issue)
})
