// `forewarn`: the library. No side effects at import; the CLI is the `forewarn` bin (dist/cli/main.js).
export * from './emulator/index.js';
export { ControlClient, DEFAULT_CONTROL_TIMEOUT_MS, type ControlClientOptions } from './control/index.js';
export type * as control from './control/types.js';
export * from './client-package.js';
