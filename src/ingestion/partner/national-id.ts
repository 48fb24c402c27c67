/**
 * Declared-source refuses national ids (400 `invalid_parameter`, nothing stored): a field named
 * like one anywhere in the body, whatever its value, and a value shaped like one in the free-text
 * field. Shapes are those `subject_ref` refuses (src/ingestion/events/subject-ref.ts). Decision 0033.
 */
import { looksLikeNationalId } from "../events/subject-ref.ts"

/** Field names (lower case, letters and digits only) that carry a national id. */
const NATIONAL_ID_KEYS = new Set([
  "nationalid",
  "nationalidnumber",
  "nationalidentifier",
  "dni",
  "nie",
  "nif",
  "ssn",
  "socialsecuritynumber",
  "cpf",
  "curp",
  "rut",
  "nino",
  "nationalinsurancenumber",
  "taxid",
  "cedula",
  "passport",
  "passportnumber",
  "idnumber",
  "identitynumber",
  "documentnumber"
])

/** Free-text fields whose words are checked for national-id shapes. */
const FREE_TEXT_FIELDS = new Set(["answer_text"])

const normaliseKey = (key: string) => key.toLowerCase().replace(/[^a-z0-9]/g, "")

/** Words of a free text: split on spaces and punctuation that never sits inside an id, trailing dots dropped. */
const wordsOf = (text: string) =>
  text.split(/[\s,;:=()[\]{}"'«»¿?¡!]+/).map((word) => word.replace(/\.+$/, "")).filter((word) => word.length > 0)

/**
 * Where the parsed JSON body carries a national id (`body.customer.national_id`,
 * `body.answer_text`), or undefined.
 */
export const findNationalId = (body: unknown, path: ReadonlyArray<string> = ["body"]): string | undefined => {
  if (Array.isArray(body)) {
    for (let index = 0; index < body.length; index++) {
      const found = findNationalId(body[index], [...path, String(index)])
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof body !== "object" || body === null) return undefined
  for (const [key, value] of Object.entries(body)) {
    const at = [...path, key]
    if (NATIONAL_ID_KEYS.has(normaliseKey(key))) return at.join(".")
    if (FREE_TEXT_FIELDS.has(key) && typeof value === "string" && wordsOf(value).some(looksLikeNationalId)) {
      return at.join(".")
    }
    const nested = findNationalId(value, at)
    if (nested !== undefined) return nested
  }
  return undefined
}
