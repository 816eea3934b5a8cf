// Asks for the control API's bearer token when the emulator refuses the page without one.
import { useEffect, useRef, useState } from 'preact/hooks';

export function TokenDialog({ hadToken, onSubmit }: { hadToken: boolean; onSubmit(token: string): void }) {
  const [value, setValue] = useState('');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  return (
    <div class="token-dialog" role="dialog" aria-modal="false" aria-labelledby="token-title">
      <form
        onSubmit={(ev) => {
          ev.preventDefault();
          onSubmit(value);
        }}
      >
        <h2 id="token-title">This emulator needs a token</h2>
        <p>
          {hadToken
            ? 'The emulator refused the token this tab had. Enter the one it was started with.'
            : 'It was started with --token (or FOREWARN_TOKEN). Enter that token to see and drive it.'}{' '}
          The page keeps it for this tab only.
        </p>
        <label>
          Bearer token{' '}
          <input ref={input} type="password" autoComplete="off" value={value} onInput={(e) => setValue(e.currentTarget.value)} required />
        </label>{' '}
        <button type="submit">Connect</button>
      </form>
    </div>
  );
}
