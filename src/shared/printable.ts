// Text from outside (an endpoint's error body, a recording's EventIds) on its way to a terminal:
// control characters become visible escapes, so no value can clear the screen, move the cursor,
// fake a line of output with CR/LF, or reorder what follows with a bidi override.

/** C0 (tab, CR and LF included), DEL, C1, the line and paragraph separators, and the bidi embeddings, overrides and isolates. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escape(char: string): string {
  const code = char.charCodeAt(0);
  return NAMED[char] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
}

/** `text` safe to print on one line; past `max` characters (before escaping) it is clipped, saying how much was left out. */
export function printable(text: string, max = Infinity): string {
  const clipped = text.length > max ? text.slice(0, max) : text;
  const rest = text.length - clipped.length;
  return clipped.replace(UNPRINTABLE, escape) + (rest > 0 ? `… (${rest} more characters)` : '');
}

/** JSON.stringify escapes C0 already; this escapes the rest as \uXXXX too, so the text shows none and parses to the same value. */
export function printableJson(value: unknown): string {
  return JSON.stringify(value).replace(UNPRINTABLE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
