import { toWellFormed } from '../persistence/well-formed-text';

/** Longest file name a `content-disposition` header carries; a longer one is cut. */
const MAX_NAME_CHARS = 255;

/**
 * A `content-disposition` value (RFC 6266) for a file name that comes from a tool: `filename` is
 * an ASCII stand-in in quotes (quotes, backslashes, control and non-ASCII characters each become
 * `_`), `filename*` the name itself, percent-encoded UTF-8 (RFC 8187). Nothing of the name can end
 * the header or add a parameter.
 */
export function contentDisposition(type: 'inline' | 'attachment', name: string): string {
  const shortened = Array.from(toWellFormed(name)).slice(0, MAX_NAME_CHARS).join('');
  const fallback = shortened.replace(/[^\x20-\x7e]|["\\]/gu, '_');
  const encoded = encodeURIComponent(shortened).replace(/['()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${type}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
