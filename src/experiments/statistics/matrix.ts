/**
 * The small dense linear algebra the regressions need: a Householder QR that notices dependent
 * columns, and inverses of its triangular factor. Matrices are row arrays at the edges and
 * column-major Float64Arrays inside (a column of X is contiguous, which is what Householder reads).
 */

/** A column whose part orthogonal to the earlier columns is below this share of its own norm is dependent. */
export const RANK_TOLERANCE = 1e-10

export interface QrDecomposition {
  /** Columns of X kept, in order; the others lie in the span of earlier kept columns. */
  readonly kept: ReadonlyArray<number>
  /** Upper-triangular R (k × k, k = kept.length), row-major. */
  readonly r: Float64Array
  /** Qᵀy, first k entries, when a response was given. */
  readonly qty: Float64Array
  /** Sum of squares of Qᵀy beyond the first k entries (the residual sum of squares). */
  readonly residualSumOfSquares: number
}

/**
 * Householder QR of the n × p matrix `rows` (and Qᵀy alongside). A column that depends on the
 * kept ones before it is left out and reported through `kept`; OLS calls a design with one
 * singular, synthetic control's variance drops it (its fitted values do not change).
 */
export const householderQr = (
  rows: ReadonlyArray<ReadonlyArray<number>>,
  y: ReadonlyArray<number>,
  p: number
): QrDecomposition => {
  const n = rows.length
  const a = new Float64Array(n * p)
  for (let i = 0; i < n; i++) {
    const row = rows[i] ?? []
    if (row.length !== p) throw new RangeError(`row ${i} has ${row.length} columns, expected ${p}`)
    for (let j = 0; j < p; j++) {
      const value = row[j] ?? Number.NaN
      if (!Number.isFinite(value)) throw new RangeError(`design value at (${i}, ${j}) must be finite, got ${value}`)
      a[j * n + i] = value
    }
  }
  const b = Float64Array.from(y)
  for (const value of b) if (!Number.isFinite(value)) throw new RangeError(`response values must be finite, got ${value}`)
  const kept: Array<number> = []
  // Column k of the working matrix holds the k-th kept column after its reflections.
  for (let j = 0; j < p; j++) {
    const k = kept.length
    const offset = j * n
    let original = 0
    for (let i = 0; i < n; i++) original += (a[offset + i] ?? 0) ** 2
    original = Math.sqrt(original)
    let norm = 0
    for (let i = k; i < n; i++) norm += (a[offset + i] ?? 0) ** 2
    norm = Math.sqrt(norm)
    if (original === 0 || norm <= RANK_TOLERANCE * original || k >= n) continue
    const head = a[offset + k] ?? 0
    const alpha = head > 0 ? -norm : norm
    // v = x − αe₁ stored in place; vᵀv = 2(norm² − α·head).
    a[offset + k] = head - alpha
    const vtv = 2 * (norm * norm - alpha * head)
    const reflect = (target: Float64Array, targetOffset: number) => {
      let dot = 0
      for (let i = k; i < n; i++) dot += (a[offset + i] ?? 0) * (target[targetOffset + i] ?? 0)
      const scale = 2 * dot / vtv
      for (let i = k; i < n; i++) target[targetOffset + i] = (target[targetOffset + i] ?? 0) - scale * (a[offset + i] ?? 0)
    }
    for (let later = j + 1; later < p; later++) reflect(a, later * n)
    reflect(b, 0)
    // The reflected column is α e_k: keep α on the diagonal, zero below.
    a[offset + k] = alpha
    for (let i = k + 1; i < n; i++) a[offset + i] = 0
    kept.push(j)
  }
  const k = kept.length
  const r = new Float64Array(k * k)
  for (let col = 0; col < k; col++) {
    const offset = (kept[col] ?? 0) * n
    for (let row = 0; row <= col; row++) r[row * k + col] = a[offset + row] ?? 0
  }
  let residualSumOfSquares = 0
  for (let i = k; i < n; i++) residualSumOfSquares += (b[i] ?? 0) ** 2
  return { kept, r, qty: b.slice(0, k), residualSumOfSquares }
}

/** Solves Rx = v for upper-triangular R (k × k, row-major). */
export const backSubstitute = (r: Float64Array, v: Float64Array, k: number): Float64Array => {
  const x = new Float64Array(k)
  for (let i = k - 1; i >= 0; i--) {
    let sum = v[i] ?? 0
    for (let j = i + 1; j < k; j++) sum -= (r[i * k + j] ?? 0) * (x[j] ?? 0)
    x[i] = sum / (r[i * k + i] ?? Number.NaN)
  }
  return x
}

/** (RᵀR)⁻¹ = R⁻¹R⁻ᵀ, i.e. (XᵀX)⁻¹ from X's R factor, row-major k × k. */
export const inverseGram = (r: Float64Array, k: number): Float64Array => {
  const rInv = new Float64Array(k * k)
  for (let col = 0; col < k; col++) {
    const e = new Float64Array(k)
    e[col] = 1
    const x = backSubstitute(r, e, k)
    for (let row = 0; row < k; row++) rInv[row * k + col] = x[row] ?? 0
  }
  const out = new Float64Array(k * k)
  for (let i = 0; i < k; i++) {
    for (let j = i; j < k; j++) {
      let sum = 0
      for (let m = Math.max(i, j); m < k; m++) sum += (rInv[i * k + m] ?? 0) * (rInv[j * k + m] ?? 0)
      out[i * k + j] = sum
      out[j * k + i] = sum
    }
  }
  return out
}

/** vᵀMv for a row-major k × k M. */
export const quadraticForm = (m: Float64Array, v: ArrayLike<number>, k: number): number => {
  let sum = 0
  for (let i = 0; i < k; i++) {
    let row = 0
    for (let j = 0; j < k; j++) row += (m[i * k + j] ?? 0) * (v[j] ?? 0)
    sum += (v[i] ?? 0) * row
  }
  return sum
}

/** uᵀMv for a row-major k × k M. */
export const bilinearForm = (m: Float64Array, u: ArrayLike<number>, v: ArrayLike<number>, k: number): number => {
  let sum = 0
  for (let i = 0; i < k; i++) {
    let row = 0
    for (let j = 0; j < k; j++) row += (m[i * k + j] ?? 0) * (v[j] ?? 0)
    sum += (u[i] ?? 0) * row
  }
  return sum
}
