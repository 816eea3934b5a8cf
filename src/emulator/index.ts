// `forewarn/emulator`: start emulators in-process. Importing it starts nothing.
export { EmulatorHandle, startEmulator } from './library.js';
export { EmulatorOptionError, type Address, type FleetDefinition, type StartEmulatorOptions } from './library-options.js';
export type { VmSpec } from './engine/fleet.js';
export type { Clock } from '../shared/clock.js';
export { ControlApiError, ControlConnectionError } from '../control/errors.js';
export { Replay, startReplay, type ReplayOptions, type ReplayStatus } from './replay/server.js';
export type { Divergence, ReplayReport } from './replay/timeline.js';
export {
  anonymise,
  parseRecording,
  serializeRecording,
  RecordingError,
  type Recording,
  type RecordingHeader,
  type RecordedChange,
} from '../protocol/recording.js';
