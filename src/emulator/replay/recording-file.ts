// A recording read from its file: line by line, each line checked as it comes (src/protocol/recording.ts),
// so loading is linear in the file and never holds more of an unchecked line than a line may be.
import {
  MAX_LINE_BYTES,
  MAX_RECORDING_BYTES,
  parseRecording,
  RecordingError,
  RecordingParser,
  serializeRecording,
  type Recording,
} from '../../protocol/recording.js';
import { LineFileError, readLines } from '../../shared/line-file.js';

/** The limits every reader of recordings and watch logs applies. */
export const RECORDING_FILE_LIMITS = { maxLineBytes: MAX_LINE_BYTES, maxBytes: MAX_RECORDING_BYTES };

/**
 * Loads a recording. A problem with a line is a RecordingError naming FILE:line; a file that cannot
 * be opened, is not a regular file (/dev/zero, a FIFO) or is too large is a LineFileError.
 */
export function readRecordingFile(path: string): Recording {
  const parser = new RecordingParser(path);
  try {
    readLines(path, RECORDING_FILE_LIMITS, (text, n, unterminated) => parser.line(text, n, unterminated));
  } catch (err) {
    if (err instanceof LineFileError && err.line !== null) throw new RecordingError(path, err.line, err.problem);
    throw err;
  }
  return parser.finish();
}

/**
 * A recording handed over as an object (the library's `startReplay({ recording })`), checked as a
 * file would be: it is written out line by line and read back, so it meets every rule a file meets
 * and its problems name `options.recording:LINE`.
 */
export function checkRecording(recording: Recording, name = 'options.recording'): Recording {
  let text: string;
  try {
    text = serializeRecording(recording);
  } catch (err) {
    // Too deep to serialize, a cycle, a BigInt: nothing a recording holds.
    throw new RecordingError(name, 1, `cannot be written as a recording: ${(err as Error).message}`);
  }
  return parseRecording(text, name);
}
