/** The value below which `fraction` of the samples lie (nearest rank); NaN for no samples. */
export function percentile(samples: readonly number[], fraction: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
  return sorted[rank];
}

export function median(samples: readonly number[]): number {
  return percentile(samples, 0.5);
}

/** A duration in nanoseconds, in the unit that suits it. */
export function formatNs(ns: number): string {
  if (!Number.isFinite(ns)) return 'n/a';
  if (ns < 1_000) return `${ns.toFixed(0)} ns`;
  if (ns < 1_000_000) return `${(ns / 1_000).toFixed(2)} µs`;
  if (ns < 1_000_000_000) return `${(ns / 1_000_000).toFixed(2)} ms`;
  return `${(ns / 1_000_000_000).toFixed(2)} s`;
}

export function formatMs(ms: number): string {
  return formatNs(ms * 1e6);
}

export function formatBytes(bytes: number): string {
  return Number.isFinite(bytes) ? `${(bytes / (1024 * 1024)).toFixed(0)} MB` : 'n/a';
}

export function ratio(value: number, base: number): string {
  return Number.isFinite(value) && Number.isFinite(base) && base > 0 ? `${(value / base).toFixed(2)}×` : 'n/a';
}
