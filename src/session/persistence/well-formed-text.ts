const LONE_SURROGATE = /\p{Surrogate}/gu;

/**
 * The text with each lone UTF-16 surrogate replaced by U+FFFD. SQLite keeps text as UTF-8, which
 * cannot hold a lone surrogate: without this it would keep the surrogate's three WTF-8 bytes and
 * read them back as three replacement characters.
 */
export function toWellFormed(text: string): string {
  LONE_SURROGATE.lastIndex = 0;
  return LONE_SURROGATE.test(text) ? text.replace(LONE_SURROGATE, '\ufffd') : text;
}
