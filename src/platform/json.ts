/** JSON.parse that answers `undefined` for text that is not JSON (untrusted input). */
export const parseJsonOrUndefined = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
