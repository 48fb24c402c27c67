/**
 * A seeded pseudo-random generator so every bootstrap and simulation is reproducible from its
 * seed: xoshiro128** (Blackman & Vigna 2018), its 128-bit state filled from the 32-bit seed by
 * splitmix32, which keeps a zero or small seed from giving a weak state. Not cryptographic.
 */

export interface Random {
  /** Uniform in [0, 1), 2⁻³² resolution. */
  readonly uniform: () => number
  /** Uniform integer in [0, n) (bias below n / 2³², negligible for the sizes used here). */
  readonly int: (n: number) => number
  /** Standard normal (Box–Muller; the second value of each pair is kept for the next call). */
  readonly normal: () => number
  /**
   * Number of successes in n Bernoulli(p) trials, exact: it walks the geometric gaps between
   * successes (of the rarer outcome), so it costs O(n·min(p, 1 − p) + 1), not O(n).
   */
  readonly binomial: (n: number, p: number) => number
}

const rotl = (x: number, k: number): number => (x << k) | (x >>> (32 - k))

export const createRandom = (seed: number): Random => {
  if (!Number.isInteger(seed)) throw new RangeError(`seed must be an integer, got ${seed}`)
  let sm = seed >>> 0
  const splitmix32 = (): number => {
    sm = (sm + 0x9e3779b9) >>> 0
    let z = sm
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
    return (z ^ (z >>> 16)) >>> 0
  }
  let s0 = splitmix32()
  let s1 = splitmix32()
  let s2 = splitmix32()
  let s3 = splitmix32()
  const nextUint32 = (): number => {
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0
    const t = s1 << 9
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = rotl(s3, 11)
    return result
  }
  const uniform = (): number => nextUint32() / 4294967296
  let spare: number | undefined
  const normal = (): number => {
    if (spare !== undefined) {
      const value = spare
      spare = undefined
      return value
    }
    // 1 - u is in (0, 1]: the logarithm stays finite.
    const radius = Math.sqrt(-2 * Math.log(1 - uniform()))
    const angle = 2 * Math.PI * uniform()
    spare = radius * Math.sin(angle)
    return radius * Math.cos(angle)
  }
  const int = (n: number): number => Math.floor(uniform() * n)
  const binomial = (n: number, p: number): number => {
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`binomial: n must be a non-negative integer, got ${n}`)
    if (!(p >= 0 && p <= 1)) throw new RangeError(`binomial: p must be in [0, 1], got ${p}`)
    if (p === 0 || n === 0) return 0
    if (p === 1) return n
    if (p > 0.5) return n - binomial(n, 1 - p)
    // Trials up to and including the next success are Geometric(p): floor(log U / log(1 − p)) + 1.
    const logQ = Math.log1p(-p)
    let successes = 0
    let position = 0
    for (;;) {
      position += Math.floor(Math.log(1 - uniform()) / logQ) + 1
      if (position > n) return successes
      successes++
    }
  }
  return { uniform, int, normal, binomial }
}
