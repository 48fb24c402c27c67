/**
 * A tiny authoritative DNS server over UDP for tests (RFC 1035 wire format, by hand): it
 * answers CNAME and TXT questions for the names a test sets, NXDOMAIN for any other name, and
 * can stop answering (to make the resolver time out). Tests point the service's resolver at it
 * (`dnsServers: ["127.0.0.1:<port>"]`), so look-ups are real DNS, not mocks.
 */
import { createSocket, type Socket } from "node:dgram"
import { Context, Effect, Layer } from "effect"

export interface DnsRecords {
  readonly cname?: string
  readonly txt?: ReadonlyArray<string>
  /** IPv4 addresses (A). */
  readonly a?: ReadonlyArray<string>
  /** IPv6 addresses (AAAA), full or `::`-compressed, without an embedded IPv4 tail. */
  readonly aaaa?: ReadonlyArray<string>
}

export interface TestDnsServer {
  readonly port: number
  /** Serves `records` for `name` (replacing what it served before). */
  readonly set: (name: string, records: DnsRecords) => void
  readonly remove: (name: string) => void
  /** While true, questions are read and never answered. */
  readonly silent: (on: boolean) => void
  /** Questions received, as `TYPE name`. */
  readonly questions: ReadonlyArray<string>
}

export class DnsServer extends Context.Service<DnsServer, TestDnsServer>()("test/DnsServer") {}

const TYPE = { A: 1, CNAME: 5, TXT: 16, AAAA: 28 } as const

const encodeA = (address: string): Buffer => Buffer.from(address.split(".").map(Number))

const encodeAaaa = (address: string): Buffer => {
  const [head = "", tail] = address.split("::")
  const left = head === "" ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right]
  const bytes = Buffer.alloc(16)
  groups.forEach((group, index) => bytes.writeUInt16BE(parseInt(group, 16), index * 2))
  return bytes
}
const CLASS_IN = 1
const TTL = 60

const normalize = (name: string) => name.toLowerCase().replace(/\.$/, "")

/** A domain name as labels: length byte, bytes, ..., a zero byte. */
const encodeName = (name: string): Buffer =>
  Buffer.concat([
    ...normalize(name).split(".").filter((label) => label !== "").map((label) => {
      const bytes = Buffer.from(label, "ascii")
      return Buffer.concat([Buffer.from([bytes.length]), bytes])
    }),
    Buffer.from([0])
  ])

/** TXT data: character-strings of at most 255 bytes each. */
const encodeTxt = (value: string): Buffer => {
  const bytes = Buffer.from(value, "utf8")
  const parts: Array<Buffer> = []
  for (let at = 0; at < bytes.length || at === 0; at += 255) {
    const chunk = bytes.subarray(at, at + 255)
    parts.push(Buffer.from([chunk.length]), chunk)
    if (bytes.length === 0) break
  }
  return Buffer.concat(parts)
}

/** One answer record: a pointer to the question's name (offset 12), type, class, TTL, data. */
const answer = (type: number, data: Buffer): Buffer => {
  const head = Buffer.alloc(12)
  head.writeUInt16BE(0xc00c, 0)
  head.writeUInt16BE(type, 2)
  head.writeUInt16BE(CLASS_IN, 4)
  head.writeUInt32BE(TTL, 6)
  head.writeUInt16BE(data.length, 10)
  return Buffer.concat([head, data])
}

interface Question {
  readonly id: number
  readonly flags: number
  readonly name: string
  readonly type: number
  /** The question section as received (echoed back, letter case included). */
  readonly raw: Buffer
}

const parseQuestion = (message: Buffer): Question | undefined => {
  if (message.length < 12 || message.readUInt16BE(4) !== 1) return undefined
  const labels: Array<string> = []
  let at = 12
  while (at < message.length) {
    const length = message[at] ?? 0
    if (length === 0) break
    if (length > 63) return undefined
    labels.push(message.subarray(at + 1, at + 1 + length).toString("ascii"))
    at += 1 + length
  }
  const end = at + 1 + 4
  if (end > message.length) return undefined
  return {
    id: message.readUInt16BE(0),
    flags: message.readUInt16BE(2),
    name: normalize(labels.join(".")),
    type: message.readUInt16BE(at + 1),
    raw: message.subarray(12, end)
  }
}

const respond = (question: Question, records: DnsRecords | undefined): Buffer => {
  const answers = records === undefined
    ? []
    : question.type === TYPE.CNAME && records.cname !== undefined
    ? [answer(TYPE.CNAME, encodeName(records.cname))]
    : question.type === TYPE.TXT
    ? (records.txt ?? []).map((value) => answer(TYPE.TXT, encodeTxt(value)))
    : question.type === TYPE.A
    ? (records.a ?? []).map((value) => answer(TYPE.A, encodeA(value)))
    : question.type === TYPE.AAAA
    ? (records.aaaa ?? []).map((value) => answer(TYPE.AAAA, encodeAaaa(value)))
    : []
  const header = Buffer.alloc(12)
  header.writeUInt16BE(question.id, 0)
  // QR, the query's opcode and RD, AA, RA; RCODE 3 (NXDOMAIN) for a name it does not know.
  const flags = 0x8000 | (question.flags & 0x7900) | 0x0400 | 0x0080 | (records === undefined ? 3 : 0)
  header.writeUInt16BE(flags, 2)
  header.writeUInt16BE(1, 4)
  header.writeUInt16BE(answers.length, 6)
  return Buffer.concat([header, question.raw, ...answers])
}

/** The server on 127.0.0.1 (an ephemeral UDP port), closed with the scope. */
export const DnsServerLayer = Layer.effect(DnsServer)(
  Effect.map(
    Effect.acquireRelease(
      Effect.callback<{ readonly server: TestDnsServer; readonly socket: Socket }>((resume) => {
        const zone = new Map<string, DnsRecords>()
        const questions: Array<string> = []
        let quiet = false
        const socket = createSocket("udp4")
        socket.on("message", (message, peer) => {
          const question = parseQuestion(message)
          if (question === undefined) return
          const type = question.type === TYPE.CNAME
            ? "CNAME"
            : question.type === TYPE.TXT
            ? "TXT"
            : question.type === TYPE.A
            ? "A"
            : question.type === TYPE.AAAA
            ? "AAAA"
            : String(question.type)
          questions.push(`${type} ${question.name}`)
          if (quiet) return
          socket.send(respond(question, zone.get(question.name)), peer.port, peer.address)
        })
        socket.bind(0, "127.0.0.1", () => {
          const server: TestDnsServer = {
            port: socket.address().port,
            set: (name, records) => void zone.set(normalize(name), records),
            remove: (name) => void zone.delete(normalize(name)),
            silent: (on) => void (quiet = on),
            questions
          }
          resume(Effect.succeed({ server, socket }))
        })
      }),
      ({ socket }) => Effect.sync(() => socket.close())
    ),
    ({ server }) => server
  )
)
