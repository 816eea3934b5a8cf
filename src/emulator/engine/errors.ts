/** What went wrong, in terms each HTTP surface maps to its own status. */
export type EngineErrorCode = 'invalid' | 'not-found' | 'conflict';

export class EngineError extends Error {
  override name = 'EngineError';
  constructor(
    readonly code: EngineErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export const invalid = (message: string) => new EngineError('invalid', message);
export const notFound = (message: string) => new EngineError('not-found', message);
export const conflict = (message: string) => new EngineError('conflict', message);
