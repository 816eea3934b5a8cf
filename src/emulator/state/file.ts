// `--state FILE`: the engine's state survives restarts. The file is a log: a snapshot line, then
// one fsynced change record per saved batch, compacted into a fresh snapshot as it grows (state/).
export { SnapshotSchema, ChangeRecordSchema, STATE_FILE_VERSION } from './schema.js';
export { StateFileError, loadStateFile, readStateFile, type StateFileContents } from './log-file.js';
export { COMPACT_FLOOR_BYTES, StateFileWriter, StateSaveError, writeStateFileSync, type StateFileWriterOptions } from './writer.js';
