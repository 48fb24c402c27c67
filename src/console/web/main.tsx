/** The console's entry (decision 0123): Preact renders the app into the shell's #app. */
import "uplot/dist/uPlot.min.css"
import "./console.css"
import { render } from "preact"
import { App } from "./app.tsx"
import { prefetch } from "./client.ts"
import { rangeOf } from "./ui.tsx"

// The Overview's reads leave with the person's own, not after them (the first screen's time to interactive).
const opening = /^\/console\/([0-9a-fA-F-]{36})\/overview\/?$/.exec(window.location.pathname)
if (opening?.[1] !== undefined) {
  const range = { profile_id: opening[1], ...rangeOf(new URLSearchParams(window.location.search)) }
  prefetch("/me")
  prefetch("/me/profiles")
  prefetch("/overview", range)
  prefetch("/timeseries", range)
  prefetch("/breakdowns/channel", { ...range, limit: 50 })
}

const root = document.getElementById("app")
if (root !== null) {
  root.textContent = ""
  render(<App />, root)
}
