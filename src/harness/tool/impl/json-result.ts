/** The `{"error":"..."}` string a tool returns to report a failure the model can act on. */
export function errorResult(message: string): string {
  return JSON.stringify({ error: message });
}

/** A tool's successful JSON result. */
export function jsonResult(value: Record<string, unknown>): string {
  return JSON.stringify(value);
}
