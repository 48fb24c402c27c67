/**
 * Least squares over the probability simplex, for synthetic-control weights: min ‖Dw − y‖² with
 * w ≥ 0 and Σw = 1.
 *
 * Method: accelerated projected gradient (FISTA, Beck & Teboulle 2009, with the adaptive restart
 * of O'Donoghue & Candès 2015), each step projected onto the simplex by the sort-based algorithm
 * of Held, Wolfe & Crowder (1974) / Duchi et al. (2008). Every 20 steps the iterate's support
 * (donors with positive weight) is tried: the equality-constrained least squares on just those
 * donors (its KKT system) is solved exactly, and when that solution is positive and no left-out
 * donor could lower the objective (the KKT conditions), it is the optimum and the iteration
 * stops. A well-posed problem thus ends at its exact optimum rather than at a tolerance.
 */

/** Euclidean projection of v onto { w : w ≥ 0, Σw = 1 }. */
export const projectToSimplex = (v: ArrayLike<number>): Float64Array => {
  const n = v.length
  if (n === 0) throw new RangeError("projectToSimplex: empty vector")
  const sorted = Float64Array.from(v).sort().reverse()
  let cumulative = 0
  let theta = 0
  for (let j = 0; j < n; j++) {
    cumulative += sorted[j] ?? 0
    const candidate = (cumulative - 1) / (j + 1)
    // The last j with sorted[j] > candidate fixes θ; sorted order makes that a prefix.
    if ((sorted[j] ?? 0) > candidate) theta = candidate
  }
  const out = new Float64Array(n)
  for (let i = 0; i < n; i++) out[i] = Math.max(0, (v[i] ?? 0) - theta)
  return out
}

export interface SimplexFit {
  readonly weights: Float64Array
  /** ‖Dw − y‖² at the weights. */
  readonly sumOfSquares: number
  readonly iterations: number
}

/** Solves the dense system Ax = b by Gaussian elimination with partial pivoting; undefined when singular. */
const solve = (a: Float64Array, b: Float64Array, n: number): Float64Array | undefined => {
  const m = Float64Array.from(a)
  const x = Float64Array.from(b)
  let scale = 0
  for (const value of m) scale = Math.max(scale, Math.abs(value))
  for (let col = 0; col < n; col++) {
    let pivot = col
    for (let row = col + 1; row < n; row++) {
      if (Math.abs(m[row * n + col] ?? 0) > Math.abs(m[pivot * n + col] ?? 0)) pivot = row
    }
    if (Math.abs(m[pivot * n + col] ?? 0) <= 1e-13 * scale) return undefined
    if (pivot !== col) {
      for (let j = 0; j < n; j++) {
        const tmp = m[col * n + j] ?? 0
        m[col * n + j] = m[pivot * n + j] ?? 0
        m[pivot * n + j] = tmp
      }
      const tmp = x[col] ?? 0
      x[col] = x[pivot] ?? 0
      x[pivot] = tmp
    }
    const diagonal = m[col * n + col] ?? 1
    for (let row = col + 1; row < n; row++) {
      const factor = (m[row * n + col] ?? 0) / diagonal
      if (factor === 0) continue
      for (let j = col; j < n; j++) m[row * n + j] = (m[row * n + j] ?? 0) - factor * (m[col * n + j] ?? 0)
      x[row] = (x[row] ?? 0) - factor * (x[col] ?? 0)
    }
  }
  for (let row = n - 1; row >= 0; row--) {
    let sum = x[row] ?? 0
    for (let j = row + 1; j < n; j++) sum -= (m[row * n + j] ?? 0) * (x[j] ?? 0)
    x[row] = sum / (m[row * n + row] ?? 1)
  }
  return x
}

/**
 * min ‖Dw − y‖² over the simplex. `donors[j][t]` is donor j at time t; `target[t]` the target.
 * Converges to a relative change of 1e-12 or `maxIterations` (default 20,000).
 */
export const fitSimplexWeights = (
  donors: ReadonlyArray<ArrayLike<number>>,
  target: ArrayLike<number>,
  options: { readonly maxIterations?: number } = {}
): SimplexFit => {
  const J = donors.length
  const T = target.length
  if (J === 0) throw new RangeError("fitSimplexWeights: no donors")
  for (const donor of donors) {
    if (donor.length !== T) throw new RangeError(`fitSimplexWeights: a donor has ${donor.length} values, the target ${T}`)
  }
  // Gram matrix G = DᵀD and h = Dᵀy: the gradient of ½‖Dw − y‖² is Gw − h.
  const G = new Float64Array(J * J)
  const h = new Float64Array(J)
  for (let i = 0; i < J; i++) {
    const di = donors[i] ?? []
    for (let t = 0; t < T; t++) h[i] = (h[i] ?? 0) + (di[t] ?? 0) * (target[t] ?? 0)
    for (let j = i; j < J; j++) {
      const dj = donors[j] ?? []
      let sum = 0
      for (let t = 0; t < T; t++) sum += (di[t] ?? 0) * (dj[t] ?? 0)
      G[i * J + j] = sum
      G[j * J + i] = sum
    }
  }
  // Summed from the residuals, not from G and h: near a perfect fit the expanded form would
  // cancel large terms and leave rounding noise to compare.
  const objective = (w: ArrayLike<number>): number => {
    let sum = 0
    for (let t = 0; t < T; t++) {
      let fitted = 0
      for (let j = 0; j < J; j++) fitted += (donors[j]?.[t] ?? 0) * (w[j] ?? 0)
      sum += ((target[t] ?? 0) - fitted) ** 2
    }
    return sum
  }
  const gradientStep = (z: Float64Array, step: number): Float64Array => {
    const next = new Float64Array(J)
    for (let i = 0; i < J; i++) {
      let gi = -(h[i] ?? 0)
      for (let j = 0; j < J; j++) gi += (G[i * J + j] ?? 0) * (z[j] ?? 0)
      next[i] = (z[i] ?? 0) - step * gi
    }
    return projectToSimplex(next)
  }
  // Lipschitz constant of ∇(½‖Dw − y‖²) is λmax(G): power iteration, with a margin.
  let v = new Float64Array(J).fill(1 / Math.sqrt(J))
  let lambda = 0
  for (let iteration = 0; iteration < 100; iteration++) {
    const next = new Float64Array(J)
    for (let i = 0; i < J; i++) {
      for (let j = 0; j < J; j++) next[i] = (next[i] ?? 0) + (G[i * J + j] ?? 0) * (v[j] ?? 0)
    }
    let norm = 0
    for (const value of next) norm += value * value
    norm = Math.sqrt(norm)
    if (norm === 0) break
    lambda = norm
    v = next.map((value) => value / norm)
  }
  let trace = 0
  for (let i = 0; i < J; i++) trace += G[i * J + i] ?? 0
  // The trace bounds λmax from above; take it when the power iteration stalled on a degenerate start.
  const lipschitz = Math.min(trace, lambda * 1.05) || trace
  /**
   * The exact optimum on the support of w, when it is one: solves [G_SS 1; 1ᵀ 0][w; μ] = [h_S; 1]
   * and accepts the solution when it is positive on S and satisfies the KKT conditions off S
   * (no left-out donor's gradient is below the common gradient of the support).
   */
  const polish = (w: Float64Array): Float64Array | undefined => {
    const support = Array.from({ length: J }, (_, i) => i).filter((i) => (w[i] ?? 0) > 1e-9)
    if (support.length === 0) return undefined
    const n = support.length
    const kkt = new Float64Array((n + 1) * (n + 1))
    const rhs = new Float64Array(n + 1)
    support.forEach((i, a) => {
      support.forEach((j, b) => {
        kkt[a * (n + 1) + b] = G[i * J + j] ?? 0
      })
      kkt[a * (n + 1) + n] = 1
      kkt[n * (n + 1) + a] = 1
      rhs[a] = h[i] ?? 0
    })
    rhs[n] = 1
    const solution = solve(kkt, rhs, n + 1)
    if (solution === undefined || !support.every((_, a) => (solution[a] ?? -1) > 0)) return undefined
    const candidate = new Float64Array(J)
    support.forEach((i, a) => {
      candidate[i] = solution[a] ?? 0
    })
    const gradient = new Float64Array(J)
    let scale = 0
    for (let i = 0; i < J; i++) {
      let gi = -(h[i] ?? 0)
      for (let j = 0; j < J; j++) gi += (G[i * J + j] ?? 0) * (candidate[j] ?? 0)
      gradient[i] = gi
      scale = Math.max(scale, Math.abs(h[i] ?? 0))
    }
    let common = 0
    for (const i of support) common += (gradient[i] ?? 0) / n
    for (let i = 0; i < J; i++) {
      if ((candidate[i] ?? 0) === 0 && (gradient[i] ?? 0) < common - 1e-9 * scale) return undefined
    }
    return candidate
  }
  const maxIterations = options.maxIterations ?? 20_000
  let w: Float64Array = new Float64Array(J).fill(1 / J)
  let iterations = 0
  let exact: Float64Array | undefined
  if (lipschitz > 0) {
    const step = 1 / lipschitz
    let z = Float64Array.from(w)
    let momentum = 1
    for (; iterations < maxIterations; iterations++) {
      const next = gradientStep(z, step)
      const nextMomentum = (1 + Math.sqrt(1 + 4 * momentum * momentum)) / 2
      let change = 0
      let restart = 0
      for (let i = 0; i < J; i++) {
        const d = (next[i] ?? 0) - (w[i] ?? 0)
        change = Math.max(change, Math.abs(d))
        restart += ((z[i] ?? 0) - (next[i] ?? 0)) * d
      }
      if (restart > 0) {
        // Momentum is pushing uphill: restart from the current point.
        momentum = 1
        z = Float64Array.from(next)
      } else {
        const beta = (momentum - 1) / nextMomentum
        z = next.map((value, i) => value + beta * (value - (w[i] ?? 0)))
        momentum = nextMomentum
      }
      w = next
      if (change <= 1e-12) break
      // Once the iterate has found the right support, the KKT solve finishes the job exactly.
      if (iterations % 20 === 19) {
        exact = polish(w)
        if (exact !== undefined) break
      }
    }
  }
  exact ??= polish(w)
  let best: Float64Array = w
  let bestValue = objective(w)
  let targetSquares = 0
  for (let t = 0; t < T; t++) targetSquares += (target[t] ?? 0) ** 2
  if (exact !== undefined) {
    const value = objective(exact)
    // Slack for rounding when both fits are exact (a residual of 1e-16·|y| per point).
    if (value <= bestValue * (1 + 1e-9) + 1e-28 * targetSquares) {
      best = exact
      bestValue = value
    }
  }
  return { weights: best, sumOfSquares: bestValue, iterations }
}
