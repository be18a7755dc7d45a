/** Small display helpers shared by the views. */

/** `850 ms`, `2.4 s`, `3 min 05 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return `${minutes} min ${String(seconds).padStart(2, '0')} s`;
}

/** `512 B`, `3.1 KB`, `2.0 MB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** A date-time in the reader's locale, short. */
export function formatTime(value: string | number): string {
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

/** JSON text pretty-printed when it parses; as it is otherwise (arguments still streaming, say). */
export function prettyJson(text: string): string {
  if (text.trim() === '') return '';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** The first `limit` characters, and whether there is more. */
export function preview(text: string, limit: number): { head: string; cut: boolean } {
  return text.length <= limit ? { head: text, cut: false } : { head: text.slice(0, limit), cut: true };
}

/** JSON text on one line (compacted when it parses), cut to `limit` characters with an ellipsis. */
export function oneLine(text: string, limit: number): string {
  let compact = text.replace(/\s+/g, ' ').trim();
  try {
    compact = JSON.stringify(JSON.parse(text));
  } catch {
    // still streaming, or not JSON: as it is
  }
  return compact.length <= limit ? compact : `${compact.slice(0, limit - 1)}…`;
}
