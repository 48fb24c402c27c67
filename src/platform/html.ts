/** Self-contained HTML pages: escaping, and the document and headers every page of the service shares. */
import { createHash } from "node:crypto"

/** Escapes text for HTML element content and quoted attribute values. */
export const escapeHtml = (value: string): string =>
  value.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c)

/**
 * The pages of one kind, styled by one inline `style` that the CSP allows by its hash: nothing
 * loads from elsewhere, forms post only to this service (and `formTargets`, e.g. a client's
 * redirect origin), and no page is stored, framed, sniffed or sent as a Referer.
 */
export const htmlPages = (style: string) => {
  const styleHash = `'sha256-${createHash("sha256").update(style, "utf8").digest("base64")}'`
  return {
    /** The whole document; `body` is HTML, already escaped where it interpolates values. */
    document: (title: string, body: string): string =>
      `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<style>${style}</style></head><body>
${body}
</body></html>`,
    headers: (formTargets: ReadonlyArray<string> = []): Record<string, string> => ({
      "cache-control": "no-store",
      pragma: "no-cache",
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "content-security-policy": [
        "default-src 'none'",
        `style-src ${styleHash}`,
        `form-action ${["'self'", ...formTargets].join(" ")}`,
        "frame-ancestors 'none'",
        "base-uri 'none'"
      ].join("; ")
    })
  }
}
