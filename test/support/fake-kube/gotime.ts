// The API server's two timestamp types, decoded and encoded as kube-apiserver does (README.md, "Times"):
//   metav1.Time       UnmarshalJSON: time.Parse(time.RFC3339, s)        MarshalJSON: UTC, RFC3339 (whole seconds)
//   metav1.MicroTime  UnmarshalJSON: time.Parse(RFC3339Micro, s)        MarshalJSON: UTC, RFC3339Micro (six digits)
// with RFC3339Micro = "2006-01-02T15:04:05.000000Z07:00" (k8s.io/apimachinery/pkg/apis/meta/v1/{time,micro_time}.go).
// `null` is the zero time (unset) for both. The parser is a port of Go's time.parse (src/time/format.go)
// restricted to the layout elements these two layouts use, so a refusal carries Go's own message:
//   parsing time "2026-11-27T03:25:11.084Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".084Z" as ".000000"

export const RFC3339 = '2006-01-02T15:04:05Z07:00';
export const RFC3339_MICRO = '2006-01-02T15:04:05.000000Z07:00';

/** An instant with microsecond precision: epoch milliseconds plus the microseconds past them (0–999). */
export interface Instant {
  ms: number;
  micros: number;
}

export type ParsedTime = { ok: true; instant: Instant } | { ok: false; error: string };

type Std = 'year' | 'month' | 'day' | 'hour' | 'minute' | 'second' | 'frac6' | 'tz';

/** Each layout as Go's nextStdChunk splits it: the literal before each element, the element and its text. */
const CHUNKS: Record<string, [string, Std, string][]> = {
  [RFC3339]: [
    ['', 'year', '2006'],
    ['-', 'month', '01'],
    ['-', 'day', '02'],
    ['T', 'hour', '15'],
    [':', 'minute', '04'],
    [':', 'second', '05'],
    ['', 'tz', 'Z07:00'],
  ],
  [RFC3339_MICRO]: [
    ['', 'year', '2006'],
    ['-', 'month', '01'],
    ['-', 'day', '02'],
    ['T', 'hour', '15'],
    [':', 'minute', '04'],
    [':', 'second', '05'],
    ['', 'frac6', '.000000'],
    ['', 'tz', 'Z07:00'],
  ],
};

class Bad extends Error {}

/** Go's quote() for time errors: ASCII printable as is (with \" and \\ escaped), other bytes as \xNN. */
function quote(s: string): string {
  let out = '"';
  for (const byte of Buffer.from(s, 'utf8')) {
    if (byte >= 0x80 || byte < 0x20) out += `\\x${byte.toString(16).padStart(2, '0')}`;
    else {
      const c = String.fromCharCode(byte);
      out += c === '"' || c === '\\' ? `\\${c}` : c;
    }
  }
  return `${out}"`;
}

const isDigit = (s: string, i: number): boolean => i < s.length && s[i]! >= '0' && s[i]! <= '9';
const commaOrPeriod = (c: string | undefined): boolean => c === '.' || c === ',';

/** getnum: one or two digits (fixed: exactly two). */
function getnum(s: string, fixed: boolean): [number, string] {
  if (!isDigit(s, 0)) throw new Bad();
  if (!isDigit(s, 1)) {
    if (fixed) throw new Bad();
    return [Number(s[0]), s.slice(1)];
  }
  return [Number(s[0]) * 10 + Number(s[1]), s.slice(2)];
}

/** atoi: an optional sign and digits, nothing else. */
function atoi(s: string): number {
  let neg = false;
  if (s.length > 0 && (s[0] === '-' || s[0] === '+')) {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (!/^\d*$/.test(s)) throw new Bad();
  const x = s === '' ? 0 : Number(s);
  return neg ? -x : x;
}

/** parseNanoseconds: value[0] is '.' or ','; value[1:nbytes] the digits. */
function parseNanoseconds(value: string, nbytes: number): { ns: number; range: string } {
  if (!commaOrPeriod(value[0])) throw new Bad();
  if (nbytes > 10) {
    value = value.slice(0, 10);
    nbytes = 10;
  }
  let ns = atoi(value.slice(1, nbytes));
  if (ns < 0) return { ns: 0, range: 'fractional second' };
  for (let i = 0; i < 10 - nbytes; i++) ns *= 10;
  return { ns, range: '' };
}

function isLeap(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

function daysIn(month: number, year: number): number {
  if (month === 2 && isLeap(year)) return 29;
  return [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
}

/** Go's time.Parse(layout, value) for RFC3339 or RFC3339Micro. */
export function parseGoTime(layout: typeof RFC3339 | typeof RFC3339_MICRO, value: string): ParsedTime {
  const avalue = value;
  const fail = (valueElem: string, layoutElem: string): ParsedTime => ({
    ok: false,
    error: `parsing time ${quote(avalue)} as ${quote(layout)}: cannot parse ${quote(valueElem)} as ${quote(layoutElem)}`,
  });
  const failMessage = (message: string): ParsedTime => ({ ok: false, error: `parsing time ${quote(avalue)}${message}` });
  let year = 0;
  let month = -1;
  let day = -1;
  let hour = 0;
  let min = 0;
  let sec = 0;
  let nsec = 0;
  let offset: number | null = null;
  const chunks = CHUNKS[layout]!;
  for (let c = 0; c < chunks.length; c++) {
    const [prefix, std, stdstr] = chunks[c]!;
    // skip(value, prefix): the literal must match exactly.
    if (!value.startsWith(prefix)) {
      let i = 0;
      while (i < prefix.length && value[i] === prefix[i]) i++;
      return fail(value.slice(i), prefix);
    }
    value = value.slice(prefix.length);
    const hold = value;
    let range = '';
    try {
      switch (std) {
        case 'year':
          if (value.length < 4 || !isDigit(value, 0)) throw new Bad();
          year = atoi(value.slice(0, 4));
          value = value.slice(4);
          break;
        case 'month':
          [month, value] = getnum(value, true);
          if (month <= 0 || month > 12) range = 'month';
          break;
        case 'day':
          [day, value] = getnum(value, true);
          break;
        case 'hour':
          [hour, value] = getnum(value, false);
          if (hour < 0 || hour >= 24) range = 'hour';
          break;
        case 'minute':
          [min, value] = getnum(value, true);
          if (min < 0 || min >= 60) range = 'minute';
          break;
        case 'second': {
          [sec, value] = getnum(value, true);
          if (sec < 0 || sec >= 60) {
            range = 'second';
            break;
          }
          // A fractional second the layout does not name is taken all the same (any number of digits).
          const next = chunks[c + 1]?.[1];
          if (value.length >= 2 && commaOrPeriod(value[0]) && isDigit(value, 1) && next !== 'frac6') {
            let n = 2;
            while (n < value.length && isDigit(value, n)) n++;
            const parsed = parseNanoseconds(value, n);
            nsec = parsed.ns;
            range = parsed.range;
            value = value.slice(n);
          }
          break;
        }
        case 'frac6': {
          // stdFracSecond0 requires exactly the number of digits the layout has.
          const ndigit = 1 + 6;
          if (value.length < ndigit) throw new Bad();
          const parsed = parseNanoseconds(value, ndigit);
          nsec = parsed.ns;
          range = parsed.range;
          value = value.slice(ndigit);
          break;
        }
        case 'tz': {
          if (value.length >= 1 && value[0] === 'Z') {
            value = value.slice(1);
            offset = 0;
            break;
          }
          if (value.length < 6 || value[3] !== ':') throw new Bad();
          const sign = value[0]!;
          // As Go does: the range checks run even after a digit error, and are reported first.
          let bad = false;
          let hr = 0;
          let mm = 0;
          try {
            [hr] = getnum(value.slice(1, 3), true);
            [mm] = getnum(value.slice(4, 6), true);
          } catch {
            bad = true;
          }
          value = value.slice(6);
          if (hr > 24) range = 'time zone offset hour';
          if (mm > 60) range = 'time zone offset minute';
          if (sign !== '+' && sign !== '-') bad = true;
          if (bad && range === '') throw new Bad();
          offset = (sign === '-' ? -1 : 1) * (hr * 60 + mm) * 60;
          break;
        }
      }
    } catch (err) {
      if (err instanceof Bad) return fail(hold, stdstr);
      throw err;
    }
    if (range !== '') return failMessage(`: ${range} out of range`);
  }
  if (value.length !== 0) return failMessage(`: extra text: ${quote(value)}`);
  if (day < 1 || day > daysIn(month, year)) return failMessage(': day out of range');
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, min, sec, 0);
  const micro = Math.floor(nsec / 1000);
  return { ok: true, instant: { ms: d.getTime() - (offset ?? 0) * 1000 + Math.floor(micro / 1000), micros: micro % 1000 } };
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

function utcSeconds(ms: number): string {
  const d = new Date(ms);
  return (
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}` +
    `T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`
  );
}

/** metav1.Time.MarshalJSON: UTC, whole seconds (the fraction is dropped, not rounded). */
export function formatTime(instant: Instant): string {
  return `${utcSeconds(instant.ms)}Z`;
}

/** metav1.MicroTime.MarshalJSON: UTC, exactly six fractional digits. */
export function formatMicroTime(instant: Instant): string {
  const ms = ((instant.ms % 1000) + 1000) % 1000;
  return `${utcSeconds(instant.ms)}.${pad(ms, 3)}${pad(instant.micros, 3)}Z`;
}

/** Exactly what the API server writes for a MicroTime: the only form a client can rely on reading back. */
export const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
