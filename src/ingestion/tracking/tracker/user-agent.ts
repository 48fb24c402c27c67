/**
 * What a `User-Agent` says about the visitor: bot or not (`isbot`, Unlicense, a maintained
 * pattern list), and device type, browser and operating system (`bowser`, MIT). Both are pure
 * and local: no look-up leaves the process.
 */
import Bowser from "bowser"
import { isbot } from "isbot"

export interface UserAgentInfo {
  /** `desktop`, `mobile`, `tablet` or `tv`; null when the agent does not say. */
  readonly device: string | null
  readonly browser: string | null
  readonly os: string | null
}

const MAX_LENGTH = 1024

/** Crawlers, link previewers, headless automation and empty agents: the collector drops them. */
export const isBot = (userAgent: string | undefined): boolean =>
  userAgent === undefined || userAgent.trim() === "" || isbot(userAgent.slice(0, MAX_LENGTH))

const DEVICES = new Set(["desktop", "mobile", "tablet", "tv"])

const orNull = (value: string | undefined): string | null =>
  value === undefined || value.trim() === "" ? null : value.trim().slice(0, 100)

export const parseUserAgent = (userAgent: string | undefined): UserAgentInfo => {
  if (userAgent === undefined || userAgent.trim() === "") return { device: null, browser: null, os: null }
  const parsed = Bowser.parse(userAgent.slice(0, MAX_LENGTH))
  const platform = parsed.platform.type
  return {
    device: platform !== undefined && DEVICES.has(platform) ? platform : null,
    browser: orNull(parsed.browser.name),
    os: orNull(parsed.os.name)
  }
}
