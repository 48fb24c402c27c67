/**
 * The outbound client against bare `node:http` (`node bench/webhooks/client.ts`; issue 31 item 7).
 *
 * One process, one local receiver answering 200; rounds alternate between the senders so the
 * machine's load falls on each alike. Each round posts BENCH_REQUESTS (4,000) signed webhook
 * bodies with BENCH_INFLIGHT (16) in flight through:
 * - bare: `node:http` with a kept-alive agent, nothing checked;
 * - client: src/platform/outbound-http.ts `send` with the public-host rule on (the host resolved,
 *   classified, the request sent to the checked address), as the webhook worker sends;
 * - old (when BENCH_OLD_PUBLIC_HOST names the previous src/webhooks/delivery/public-host.ts):
 *   its `checkTarget` then `postToChecked`, the webhook sender before the one client.
 * Prints requests/s per round and each sender's median over BENCH_ROUNDS (6) rounds.
 */
import { Duration, Effect } from "effect"
import { Agent, createServer, request as httpRequest } from "node:http"
import { send } from "../../src/platform/outbound-http.ts"
import { parseAllowList, resolveCache } from "../../src/platform/public-host.ts"
import { signedHeaders, newSecret } from "../../src/webhooks/delivery/signing.ts"
import { fmt, intFromEnv } from "../support.ts"

const REQUESTS = intFromEnv("BENCH_REQUESTS", 4_000, 1_000_000)
const INFLIGHT = intFromEnv("BENCH_INFLIGHT", 16, 1_000)
const ROUNDS = intFromEnv("BENCH_ROUNDS", 6, 100)

const server = createServer((req, res) => {
  req.resume()
  req.on("end", () => res.writeHead(200).end())
})
await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
const address = server.address()
const port = typeof address === "object" && address !== null ? address.port : 0
const url = `http://127.0.0.1:${port}/hook`
const secret = newSecret()
const body = JSON.stringify({ id: "evt", type: "outcome.recorded", provider: "svc", created_at: new Date().toISOString(), data: {} })
const headers = () => ({ "content-type": "application/json", ...signedHeaders([secret], crypto.randomUUID(), Math.floor(Date.now() / 1000), body) })
const allow = parseAllowList(["127.0.0.1"])
const cache = resolveCache(5)

const agent = new Agent({ keepAlive: true, maxSockets: INFLIGHT })
const bare = () =>
  new Promise<void>((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path: "/hook", method: "POST", agent, headers: headers() }, (res) => {
      res.resume()
      res.on("end", () => resolve())
    })
    req.on("error", reject)
    req.end(body)
  })
const client = () =>
  Effect.runPromise(send({ method: "POST", url, headers: headers(), body, timeout: Duration.seconds(15), publicOnly: { allow, dnsServers: [], cache }, keepBody: false }))
    .then(() => undefined)

interface OldModule {
  readonly parseAllowList: (entries: ReadonlyArray<string>) => unknown
  readonly resolveCache: (seconds: number) => unknown
  readonly checkTarget: (raw: string, allow: unknown, dns: ReadonlyArray<string>, cache: unknown) => Effect.Effect<unknown, unknown>
  readonly postToChecked: (target: unknown, headers: Record<string, string>, body: string, timeout: Duration.Duration) => Effect.Effect<unknown, unknown>
}
const oldPath = process.env["BENCH_OLD_PUBLIC_HOST"]
const old: OldModule | undefined = oldPath === undefined ? undefined : await import(oldPath)
const oldAllow = old?.parseAllowList(["127.0.0.1"])
const oldCache = old?.resolveCache(5)
const previous = old === undefined ? undefined : () =>
  Effect.runPromise(Effect.flatMap(old.checkTarget(url, oldAllow, [], oldCache), (target) => old.postToChecked(target, headers(), body, Duration.seconds(15))))
    .then(() => undefined)

const round = async (one: () => Promise<void>) => {
  let next = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: INFLIGHT }, async () => {
    while (next++ < REQUESTS) await one()
  }))
  return REQUESTS / ((performance.now() - started) / 1000)
}

const senders: Array<[string, () => Promise<void>]> = [["bare", bare], ["client", client], ...(previous === undefined ? [] : [["old", previous] as [string, () => Promise<void>]])]
const rates = new Map(senders.map(([name]) => [name, [] as Array<number>]))
await round(bare) // warm-up
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? senders : [...senders].reverse()
  const line: Array<string> = []
  for (const [name, one] of order) {
    const rate = await round(one)
    rates.get(name)!.push(rate)
    line.push(`${name} ${fmt(rate)}/s`)
  }
  console.log(`round ${r + 1}: ${line.join(", ")}`)
}
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const bareMedian = median(rates.get("bare")!)
for (const [name, xs] of rates) console.log(`${name}: median ${fmt(median(xs))} requests/s = ${fmt(median(xs) / bareMedian, 2)}x bare`)
agent.destroy()
server.close()
process.exit()
