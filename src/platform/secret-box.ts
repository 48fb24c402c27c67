/**
 * Encryption for the few secrets the service must read back (an OAuth app's JWT signing
 * secret, a commerce app's client secret): AES-256-GCM with a key from `SVC_SECRETS_KEY`
 * (32 bytes, base64), or, when unset (only on the embedded database outside production, decision
 * 0105), a key generated once into `SVC_DATA_DIR/secrets.key`.
 */
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from "node:crypto"
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { AppConfig } from "./config.ts"
import { privateDir } from "./data-dir.ts"

const VERSION = "v1"

export class SecretBox extends Context.Service<SecretBox, {
  readonly seal: (plaintext: string) => string
  /** Throws (a defect) on a value sealed with another key or tampered with. */
  readonly open: (sealed: string) => string
  /**
   * A keyed hash (HMAC-SHA-256, hex) of `value` under a key derived for `purpose`: for values
   * that must be matched but never stored, such as a national id.
   */
  readonly keyedHash: (purpose: string, value: string) => string
}>()("svc/SecretBox") {
  static readonly make = (key: Buffer) => {
    if (key.length !== 32) throw new Error("SVC_SECRETS_KEY must decode to 32 bytes")
    const derived = new Map<string, Buffer>()
    const keyFor = (purpose: string) => {
      let found = derived.get(purpose)
      if (found === undefined) {
        found = Buffer.from(hkdfSync("sha256", key, Buffer.alloc(0), `svc-keyed-hash:${purpose}`, 32))
        derived.set(purpose, found)
      }
      return found
    }
    return SecretBox.of({
      keyedHash: (purpose, value) => createHmac("sha256", keyFor(purpose)).update(value, "utf8").digest("hex"),
      seal: (plaintext) => {
        const iv = randomBytes(12)
        const cipher = createCipheriv("aes-256-gcm", key, iv)
        const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
        return [VERSION, iv.toString("base64url"), body.toString("base64url"), cipher.getAuthTag().toString("base64url")]
          .join(".")
      },
      open: (sealed) => {
        const [version, iv, body, tag] = sealed.split(".")
        if (version !== VERSION || iv === undefined || body === undefined || tag === undefined) {
          throw new Error("not a sealed secret")
        }
        const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"))
        decipher.setAuthTag(Buffer.from(tag, "base64url"))
        return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8")
      }
    })
  }

  static readonly layer = Layer.effect(SecretBox)(
    Effect.gen(function*() {
      const settings = yield* AppConfig
      const key = Option.match(settings.secretsKey, {
        onSome: (value) => Buffer.from(Redacted.value(value), "base64"),
        onNone: () => Buffer.from(keyFileContent(settings.dataDir), "base64")
      })
      return SecretBox.make(key)
    })
  )
}

/**
 * The generated key of a development start without `SVC_SECRETS_KEY` (created once, readable by
 * the owner only, in a directory only the owner may enter).
 */
export const keyFileContent = (dataDir: string): string => {
  const path = join(dataDir, "secrets.key")
  if (!existsSync(path)) {
    privateDir(dataDir)
    writeFileSync(path, randomBytes(32).toString("base64"), { flag: "wx", mode: 0o600 })
    chmodSync(path, 0o600)
  }
  return readFileSync(path, "utf8").trim()
}
