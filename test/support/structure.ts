/**
 * The tree's structure from its imports, at the level a newcomer reads it: one unit per folder
 * under src/, plus cluster/, sandbox/ and schema/. Used by test/unit/context-map.test.ts and by
 * `npm run structure`, which prints the figures the backbone issue names (folders, imports against
 * the stated direction, folder loops, repository-to-repository imports).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

export const ROOTS = ["src", "cluster", "sandbox", "schema"] as const

export interface FileImport {
  readonly from: string
  readonly to: string
  readonly typeOnly: boolean
}

const listTs = (dir: string): ReadonlyArray<string> => {
  if (!existsSync(dir)) return []
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return listTs(path)
    return path.endsWith(".ts") && !path.endsWith(".d.ts") ? [path] : []
  })
}

// Static imports and re-exports (`from "x"`), side-effect imports and dynamic `import("x")`.
const SPECIFIER = /(?:^|[\s;])(import|export)(\s+type)?[\s\S]*?\sfrom\s*"([^"]+)"|import\s*\(\s*"([^"]+)"\s*\)|^import\s+"([^"]+)"/gm

/** Every relative import between files of the roots, as paths relative to `root`. */
export const fileImports = (root: string): ReadonlyArray<FileImport> => {
  const files = ROOTS.flatMap((r) => listTs(join(root, r)))
  return files.flatMap((file) => {
    const text = readFileSync(file, "utf8")
    const found: Array<FileImport> = []
    for (const match of text.matchAll(SPECIFIER)) {
      const specifier = match[3] ?? match[4] ?? match[5]
      if (specifier === undefined || !specifier.startsWith(".")) continue
      const target = resolve(dirname(file), specifier)
      if (!existsSync(target) || !ROOTS.some((r) => relative(root, target).startsWith(`${r}/`))) continue
      found.push({ from: relative(root, file), to: relative(root, target), typeOnly: match[2] !== undefined })
    }
    return found
  })
}

/** The unit a file belongs to: `src/<folder>` for src/, else its top-level folder. */
export const unitOf = (path: string): string => {
  const parts = path.split("/")
  return parts[0] === "src" && parts.length > 2 ? `src/${parts[1]}` : parts[0]!
}

export const isRepository = (path: string): boolean => /(^|\/)(repo|[a-z-]+-repo)\.ts$/.test(path)

export interface Structure {
  readonly units: ReadonlyArray<string>
  readonly srcFolders: number
  /** unit -> units it imports (other than itself). */
  readonly edges: ReadonlyMap<string, ReadonlySet<string>>
  /** Folder-to-folder file imports (each file import between two units counts once). */
  readonly crossImports: ReadonlyArray<FileImport>
  /** Strongly connected groups of two or more units. */
  readonly loops: ReadonlyArray<ReadonlyArray<string>>
  readonly mutualPairs: ReadonlyArray<readonly [string, string]>
  readonly repoToRepo: ReadonlyArray<FileImport>
}

const stronglyConnected = (nodes: ReadonlyArray<string>, edges: ReadonlyMap<string, ReadonlySet<string>>) => {
  let index = 0
  const indices = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const groups: Array<Array<string>> = []
  const visit = (node: string): void => {
    indices.set(node, index)
    low.set(node, index)
    index++
    stack.push(node)
    onStack.add(node)
    for (const next of edges.get(node) ?? []) {
      if (!indices.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node)!, low.get(next)!))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, indices.get(next)!))
      }
    }
    if (low.get(node) === indices.get(node)) {
      const group: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        group.push(member)
      } while (member !== node)
      if (group.length > 1) groups.push(group.sort())
    }
  }
  for (const node of nodes) if (!indices.has(node)) visit(node)
  return groups
}

export const structure = (root: string): Structure => {
  const imports = fileImports(root)
  const crossImports = imports.filter((i) => unitOf(i.from) !== unitOf(i.to))
  const edges = new Map<string, Set<string>>()
  for (const i of crossImports) {
    const set = edges.get(unitOf(i.from)) ?? new Set<string>()
    set.add(unitOf(i.to))
    edges.set(unitOf(i.from), set)
  }
  const units = [...new Set(imports.flatMap((i) => [unitOf(i.from), unitOf(i.to)]))].sort()
  const mutualPairs = units.flatMap((a) =>
    [...(edges.get(a) ?? [])].filter((b) => a < b && edges.get(b)?.has(a)).map((b) => [a, b] as const)
  )
  return {
    units,
    srcFolders: readdirSync(join(root, "src")).filter((n) => statSync(join(root, "src", n)).isDirectory()).length,
    edges,
    crossImports,
    loops: stronglyConnected(units, edges),
    mutualPairs,
    repoToRepo: imports.filter((i) => isRepository(i.from) && isRepository(i.to))
  }
}

/** Layers from bottom to top as written in src/README.md: `N. name, name` lines under "## Layers". */
export const statedLayers = (root: string): ReadonlyMap<string, number> => {
  const text = readFileSync(join(root, "src", "README.md"), "utf8")
  const section = text.split(/^## /m).find((s) => s.startsWith("Layers"))
  const layers = new Map<string, number>()
  for (const line of (section ?? "").split("\n")) {
    const match = /^(\d+)\. (.+)$/.exec(line.trim())
    if (match === null) continue
    for (const name of match[2]!.matchAll(/`([^`]+)`/g)) layers.set(name[1]!.replace(/\/$/, ""), Number(match[1]))
  }
  return layers
}

/** Imports from a unit to a unit of a higher layer, or to another unit of the same layer. */
export const againstDirection = (s: Structure, layers: ReadonlyMap<string, number>) =>
  s.crossImports.filter((i) => {
    const from = layers.get(unitOf(i.from))
    const to = layers.get(unitOf(i.to))
    return from === undefined || to === undefined || to >= from
  })

const main = () => {
  const root = resolve(dirname(new URL(import.meta.url).pathname), "..", "..")
  const s = structure(root)
  console.log(`folders under src/: ${s.srcFolders}`)
  console.log(`units (src/* folders, cluster, sandbox, schema): ${s.units.length}`)
  console.log(`folder-to-folder imports: ${s.crossImports.length}`)
  console.log(`folder pairs importing each other: ${s.mutualPairs.length}`)
  for (const [a, b] of s.mutualPairs) console.log(`  ${a} <-> ${b}`)
  console.log(`folder loops: ${s.loops.length}`)
  for (const loop of s.loops) console.log(`  ${loop.length} folders: ${loop.join(", ")}`)
  console.log(`repository-to-repository imports: ${s.repoToRepo.length}`)
  for (const i of s.repoToRepo) console.log(`  ${i.from} -> ${i.to}`)
  if (existsSync(join(root, "src", "README.md"))) {
    const against = againstDirection(s, statedLayers(root))
    console.log(`imports against the stated direction (src/README.md): ${against.length}`)
    for (const i of against) console.log(`  ${i.from} -> ${i.to}`)
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === new URL(import.meta.url).pathname) main()
