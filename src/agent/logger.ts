// The agent's logger: pino JSON lines on stdout for journald and log shippers; readable lines on a terminal.
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { ScheduledEvent } from '../client/index.js';

export type { Logger };

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LoggerOptions {
  level?: LogLevel;
  /** Default: whether stdout is a terminal. */
  pretty?: boolean;
  /** Where JSON lines go; default stdout. Tests pass their own. */
  destination?: NodeJS.WritableStream;
}

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const usePretty = options.pretty ?? (options.destination === undefined && process.stdout.isTTY === true);
  const base = { name: 'forewarn-agent' };
  if (usePretty) {
    // In-process and synchronous, so the last lines before exit are not lost to a worker thread.
    return pino(
      { level, base },
      pretty({ colorize: true, sync: true, singleLine: true, ignore: 'pid,hostname,name', translateTime: 'SYS:HH:MM:ss.l' }),
    );
  }
  // Synchronous writes: a SIGKILL or process.exit must not swallow the journal of what was decided.
  const stream = options.destination ?? pino.destination({ dest: 1, sync: true });
  return pino({ level, base, timestamp: pino.stdTimeFunctions.isoTime }, stream);
}

/** Every line about one event carries these, whichever part of the agent writes it. */
export function eventLogger(log: Logger, event: ScheduledEvent): Logger {
  return log.child({ eventId: event.id, eventType: event.type, source: event.source });
}
