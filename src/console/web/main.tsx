/** The console's entry (decision 0123): Preact renders the app into the shell's #app. */
import "uplot/dist/uPlot.min.css"
import "./console.css"
import { render } from "preact"
import { App } from "./app.tsx"

const root = document.getElementById("app")
if (root !== null) {
  root.textContent = ""
  render(<App />, root)
}
