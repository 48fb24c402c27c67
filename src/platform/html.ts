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

/** The plain style of the sign-in, consent and error pages (OAuth, and the HTTP adapter's refusals on HTML routes). */
const FORM_PAGE_STYLE = "body{font:15px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1d232b}" +
  "code{font:13px ui-monospace,monospace;background:#f1f3f5;padding:.1rem .3rem;border-radius:3px}" +
  "fieldset{border:1px solid #dde1e6;border-radius:4px;margin:1rem 0}label{display:block;margin:.3rem 0}" +
  "button{font:inherit;padding:.5rem 1.2rem;margin-right:.5rem;border-radius:4px;border:1px solid #8a939e;background:#fff}" +
  "button[value=approve]{background:#0b63c5;border-color:#0b63c5;color:#fff}.muted{color:#5b6570}"


export const formPages = htmlPages(FORM_PAGE_STYLE)

/** A page saying what went wrong, in the plain style. */
export const errorPage = (title: string, message: string): string =>
  formPages.document(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>`)
