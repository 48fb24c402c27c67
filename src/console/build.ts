/**
 * The console's front end (src/console/web/, decision 0123), bundled by esbuild in memory the
 * first time a console page is asked for: no generated file in git, no build step before
 * `npm start`, nothing written to disk (the image's tree is read-only). A few hundred
 * milliseconds once per process; the result is kept.
 */
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { gzipSync } from "node:zlib"
import { fileURLToPath } from "node:url"

export interface ConsoleAsset {
  /** Content-addressed: a new build is a new URL, so an old one may be cached for good. */
  readonly path: `/console/assets/${string}`
  readonly contentType: string
  readonly bytes: Uint8Array
  /** The same bytes gzipped once at build: the script is about a third of its size so. */
  readonly gzipped: Uint8Array
}

export interface ConsoleBundle {
  readonly script: ConsoleAsset
  readonly style: ConsoleAsset
}

const ENTRY = fileURLToPath(new URL("./web/main.tsx", import.meta.url))

const asset = (name: string, contentType: string, bytes: Uint8Array): ConsoleAsset => ({
  path: `/console/assets/${createHash("sha256").update(bytes).digest("hex").slice(0, 16)}/${name}`,
  contentType,
  bytes,
  gzipped: gzipSync(bytes, { level: 9 })
})

/** One esbuild run: the script and the style sheet it imports (uPlot's and the console's own). */
const buildOnce = async (): Promise<ConsoleBundle> => {
  // Loaded on first use: a process that never serves the console never starts esbuild's binary.
  const esbuild = await import("esbuild")
  const result = await esbuild.build({
    entryPoints: [ENTRY],
    bundle: true,
    write: false,
    outdir: "out",
    format: "esm",
    target: "es2022",
    minify: true,
    legalComments: "none",
    jsx: "automatic",
    jsxImportSource: "preact",
    logLevel: "silent"
  })
  // The bundle is kept; esbuild's child process is not needed until the next process builds again.
  await esbuild.stop()
  const js = result.outputFiles.find((file) => file.path.endsWith(".js"))
  const css = result.outputFiles.find((file) => file.path.endsWith(".css"))
  if (js === undefined || css === undefined) throw new Error("the console build gave no script or no style sheet")
  return {
    script: asset("console.js", "text/javascript; charset=utf-8", js.contents),
    style: asset("console.css", "text/css; charset=utf-8", css.contents)
  }
}

let building: Promise<ConsoleBundle> | undefined

/** The bundle, built on first call and kept; a failed build is tried again on the next call. */
export const consoleBundle: Effect.Effect<ConsoleBundle> = Effect.promise(() => {
  building ??= buildOnce().catch((error: unknown) => {
    building = undefined
    throw error
  })
  return building
})
