// How times and durations read on the page. The emulator's times are UTC, so the page shows UTC.

export const ms = (iso: string): number => Date.parse(iso);

/** `14m 05s`, `2h 03m`, `45s`; negative means already past. */
export function countdown(msLeft: number): string {
  if (msLeft <= 0) return 'due';
  const total = Math.ceil(msLeft / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m ${String(s).padStart(2, '0')}s`;
  return `${s}s`;
}

/** `00:15:00` of the emulator's day, in UTC. */
export function clockTime(at: number): string {
  return new Date(at).toISOString().slice(11, 19);
}

/** `2024-01-01 00:15:00 UTC`. */
export function fullTime(at: number): string {
  return `${new Date(at).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** DurationInSeconds as the seed defines it: -1 is unknown. */
export function duration(seconds: number): string {
  if (seconds < 0) return 'unknown';
  if (seconds < 120) return `${seconds}s`;
  return `${Math.round(seconds / 60)}m`;
}

/** The first block of a GUID is enough to tell events apart on screen; the full id is in the title. */
export const shortId = (id: string): string => id.split('-')[0] ?? id;
