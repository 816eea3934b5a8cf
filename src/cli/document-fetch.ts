// fetch for `forewarn record`: a body is read as a stream and refused once past the document cap,
// so an endpoint sending 200 MB costs the recorder no more memory than the cap; a document nested
// deeper than a recording may hold is refused before anything parses it.
import { MAX_NESTING_DEPTH, nestingExceeds } from '../protocol/recording.js';

/** A body the recorder will not take; the recording stops with it. */
export class DocumentRefusedError extends Error {
  override name = 'DocumentRefusedError';
}

/** Statuses whose Response may not carry a body. */
const NULL_BODY = new Set([101, 204, 205, 304]);

/**
 * A fetch whose answers hold at most `maxBytes` of body. A body past it, or a 2xx body nested too
 * deep for a recording line, is cancelled, passed to `onRefused` (which stops the recorder) and thrown.
 */
export function documentFetch(maxBytes: number, onRefused: (err: DocumentRefusedError) => void, base: typeof fetch = fetch): typeof fetch {
  const refuse = (why: string): never => {
    const err = new DocumentRefusedError(`${why}; recording stopped`);
    onRefused(err);
    throw err;
  };
  const cap = `the most a document may be (raise it with --max-document-bytes N if the document is real)`;
  return async (input, init) => {
    const response = await base(input, init);
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    if (declared > maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      refuse(`the endpoint declared a body of ${declared} bytes, larger than ${maxBytes} bytes, ${cap}`);
    }
    const chunks: Uint8Array[] = [];
    let length = 0;
    if (response.body !== null) {
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (length + value.byteLength > maxBytes) {
          await reader.cancel().catch(() => undefined);
          refuse(`the endpoint sent a body larger than ${maxBytes} bytes, ${cap}`);
        }
        chunks.push(value);
        length += value.byteLength;
      }
    }
    const body = Buffer.concat(chunks, length);
    // Its recording line wraps a document in one more level.
    if (response.ok && nestingExceeds(body.toString('utf8'), MAX_NESTING_DEPTH - 1)) {
      refuse(`the endpoint sent a document nested deeper than ${MAX_NESTING_DEPTH - 1} levels, which no recording line may hold`);
    }
    return new Response(NULL_BODY.has(response.status) ? null : body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
