// NotBefore formatting and parsing. Time always comes in as epoch ms; nothing here reads the clock.

export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** `Mon, 19 Sep 2016 18:29:47 GMT`; milliseconds are dropped. */
export function formatRfc1123(ms: number): string {
  if (!Number.isFinite(ms)) throw new RangeError(`Cannot format time ${String(ms)}`);
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) throw new RangeError(`Cannot format time ${String(ms)}`);
  return d.toUTCString();
}

/** ISO 8601 in UTC with a Z, millisecond precision. */
export function formatIso(ms: number): string {
  return new Date(ms).toISOString();
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MS_PER_DAY = 86_400_000;

// Case-insensitive names: some producers shout them.
const RFC1123 =
  /^(?:(Sun|Mon|Tue|Wed|Thu|Fri|Sat)\s*,\s*)?(\d{1,2})\s+(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+(\d{4})\s+(\d{2}):(\d{2}):(\d{2})(?:\s*(GMT|UTC|UT|Z|[+-]0000))?$/i;

const ISO8601 = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))?$/i;

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

function daysInMonth(y: number, m: number): number {
  return m === 2 ? (isLeap(y) ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31;
}

// Days since 1970-01-01 for a proleptic Gregorian date (Hinnant's algorithm); avoids Date.UTC's 0-99 year quirk.
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

interface Fields {
  y: number;
  mo: number;
  d: number;
  h: number;
  mi: number;
  s: number;
  ms: number;
}

function toEpoch(text: string, f: Fields): number {
  const valid = f.mo >= 1 && f.mo <= 12 && f.d >= 1 && f.d <= daysInMonth(f.y, f.mo) && f.h <= 23 && f.mi <= 59 && f.s <= 59;
  if (!valid) throw new ProtocolError(`NotBefore ${JSON.stringify(text)} is not a real date and time`);
  return daysFromCivil(f.y, f.mo, f.d) * MS_PER_DAY + ((f.h * 60 + f.mi) * 60 + f.s) * 1000 + f.ms;
}

function num(s: string | undefined): number {
  return s === undefined ? 0 : Number.parseInt(s, 10);
}

/**
 * Parses a NotBefore value: `""` gives null; RFC 1123 or ISO 8601 give epoch ms.
 * A time without a zone is taken as UTC, since IMDS only ever speaks GMT.
 */
export function parseEventTime(text: string): number | null {
  const t = text.trim();
  if (t === '') return null;

  const r = RFC1123.exec(t);
  if (r !== null) {
    const [, wd, d, mon, y, h, mi, s] = r;
    const mo = MONTHS.findIndex((m) => m.toLowerCase() === mon?.toLowerCase()) + 1;
    const fields: Fields = { y: num(y), mo, d: num(d), h: num(h), mi: num(mi), s: num(s), ms: 0 };
    const ms = toEpoch(text, fields);
    if (wd !== undefined) {
      const actual = WEEKDAYS[(((Math.floor(ms / MS_PER_DAY) + 4) % 7) + 7) % 7] ?? '';
      if (actual.toLowerCase() !== wd.toLowerCase()) {
        throw new ProtocolError(`NotBefore ${JSON.stringify(text)} says ${wd} but that date is a ${actual}`);
      }
    }
    return ms;
  }

  const i = ISO8601.exec(t);
  if (i !== null) {
    const [, y, mo, d, h, mi, s, frac, , sign, oh, om] = i;
    const fields: Fields = {
      y: num(y),
      mo: num(mo),
      d: num(d),
      h: num(h),
      mi: num(mi),
      s: num(s),
      ms: frac === undefined ? 0 : num(frac.slice(0, 3).padEnd(3, '0')),
    };
    const ms = toEpoch(text, fields);
    if (sign === undefined) return ms;
    const offH = num(oh);
    const offM = num(om);
    if (offH > 23 || offM > 59) {
      throw new ProtocolError(`NotBefore ${JSON.stringify(text)} has an impossible UTC offset`);
    }
    const offset = (offH * 60 + offM) * 60_000;
    return sign === '-' ? ms + offset : ms - offset;
  }

  throw new ProtocolError(`NotBefore ${JSON.stringify(text)} is neither RFC 1123 nor ISO 8601`);
}
