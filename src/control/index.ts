// `forewarn/control`: a typed client for a running emulator's control API; no zod, no emulator at run time.
export { ControlClient, DEFAULT_CONTROL_TIMEOUT_MS, type ControlClientOptions } from './client.js';
export { ControlApiError, ControlConnectionError } from './errors.js';
export type * from './types.js';
