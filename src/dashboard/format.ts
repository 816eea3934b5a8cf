// How times and durations read on the page. The emulator's times are UTC, so the page shows UTC.

export const ms = (iso: string): number => Date.parse(iso);

/** [choice] A time left past this reads in days, with its date beside it: hundreds of hours mean nothing at a glance. */
export const DAYS_AFTER_MS = 48 * 3600 * 1000;

/** [choice] Past this, the hours no longer matter: whole days only. */
const WHOLE_DAYS_AFTER_MS = 30 * 86400 * 1000;

/** `14m 05s`, `2h 03m`, `45s`; past 48 h `7d 04h`, past 30 days `27,419 days`; none left is `due`. */
export function countdown(msLeft: number): string {
  if (msLeft <= 0) return 'due';
  const total = Math.ceil(msLeft / 1000);
  if (msLeft > DAYS_AFTER_MS) {
    const days = Math.floor(total / 86400);
    if (msLeft > WHOLE_DAYS_AFTER_MS) return `${grouped(days)} days`;
    return `${days}d ${String(Math.floor((total % 86400) / 3600)).padStart(2, '0')}h`;
  }
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m ${String(s).padStart(2, '0')}s`;
  return `${s}s`;
}

/** `27,419`: thousands grouped the same in every browser locale. */
function grouped(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** `00:15:00` of the emulator's day, in UTC. */
export function clockTime(at: number): string {
  return new Date(at).toISOString().slice(11, 19);
}

/** `2024-01-01 00:15:00 UTC`. */
export function fullTime(at: number): string {
  return `${new Date(at).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** `2099-01-01 00:00 UTC`: a time too far off for a countdown. */
export function dateTime(at: number): string {
  return `${new Date(at).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** `12-04`: an axis tick when the ticks are days apart. */
export function monthDay(at: number): string {
  return new Date(at).toISOString().slice(5, 10);
}

/** DurationInSeconds as the seed defines it: -1 is unknown. */
export function duration(seconds: number): string {
  if (seconds < 0) return 'unknown';
  if (seconds < 120) return `${seconds}s`;
  return `${Math.round(seconds / 60)}m`;
}

/** The first block of a GUID is enough to tell events apart on screen; the full id is in the title. */
export const shortId = (id: string): string => id.split('-')[0] ?? id;
