// Lateness histograms of the overview's rollup (schema migration 6): bucket i holds a lateness in
// [2^(i/4) - 1, 2^((i+1)/4) - 1) ms (about 19 % wide), i from 0 to 127. Histograms of several
// minutes add up element-wise; a percentile is read off the cumulative counts, reported as the
// bucket's geometric middle, so within about 9 % of the true value.
export const LATENESS_BUCKETS = 128

/** The bucket of a lateness (the SQL of migration 6 computes the same). */
export const latenessBucket = (ms: number): number =>
  Math.min(LATENESS_BUCKETS - 1, Math.floor((4 * Math.log(1 + Math.max(0, ms))) / Math.LN2))

const lowerBound = (bucket: number) => 2 ** (bucket / 4) - 1

/** The value reported for a bucket: the geometric middle of its bounds (bucket 0: 0 ms to 0.19 ms → 0). */
export const bucketValue = (bucket: number): number =>
  bucket === 0 ? 0 : Math.sqrt((lowerBound(bucket) + 1) * (lowerBound(bucket + 1) + 1)) - 1

/** Element-wise sum (missing entries are 0). */
export const addHistograms = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): Array<number> =>
  Array.from({ length: Math.max(a.length, b.length) }, (_, i) => (a[i] ?? 0) + (b[i] ?? 0))

/** The `p` quantile (0 < p ≤ 1) in ms, rounded to 0.1 ms; null for an empty histogram. */
export const percentile = (histogram: ReadonlyArray<number>, p: number): number | null => {
  const total = histogram.reduce((sum, n) => sum + n, 0)
  if (total === 0) return null
  const rank = Math.ceil(p * total)
  let seen = 0
  for (let bucket = 0; bucket < histogram.length; bucket++) {
    seen += histogram[bucket] ?? 0
    if (seen >= rank) return Math.round(bucketValue(bucket) * 10) / 10
  }
  return Math.round(bucketValue(histogram.length - 1) * 10) / 10
}
