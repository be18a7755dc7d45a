/** How much of a file's start is inspected to decide whether it is binary. */
export const BINARY_SNIFF_BYTES = 8192;

/** Heuristic used by git and grep: text files do not contain NUL bytes. */
export function looksBinary(sample: Uint8Array): boolean {
  return sample.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}
