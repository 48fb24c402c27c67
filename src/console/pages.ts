/**
 * The console's one HTML document (decision 0123): a shell that loads the bundled script and
 * style sheet from this origin. Every console address (`/`, `/console/...`) answers the same
 * shell; the script routes in the browser. Nothing inline: the CSP allows no inline script or
 * style, nothing from another origin, and the page calls only this origin's /api/v1.
 */
import { escapeHtml } from "../platform/html.ts"
import type { ConsoleBundle } from "./build.ts"

export const CONSOLE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
  "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

export const consoleHeaders: Record<string, string> = {
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  // The shell names the current bundle's addresses: always ask again.
  "cache-control": "no-cache"
}

export const shellPage = (bundle: ConsoleBundle): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Attribution console</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${escapeHtml(bundle.style.path)}">
<script type="module" src="${escapeHtml(bundle.script.path)}"></script>
</head><body>
<div id="app"><p class="loading">Loading the console…</p></div>
<noscript><p>The console needs JavaScript. The same data is in the API: <a href="/docs">reference</a>.</p></noscript>
</body></html>`
