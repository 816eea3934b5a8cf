// The raw document a chosen VM would get from IMDS at a chosen api-version, byte for byte.
import { useEffect, useState } from 'preact/hooks';
import { LATEST_API_VERSION, NEWEST_VERSIONS } from '../../protocol/versions.js';
import type { ControlApi, FleetResponse } from '../api.js';
import { Picker, usePick } from './Picker.js';

interface Props {
  api: ControlApi;
  fleet: FleetResponse | null;
  /** Changes whenever any document changed. */
  version: number;
}

export function DocumentView({ api, fleet, version }: Props) {
  const names = fleet?.vms.map((v) => v.name) ?? [];
  const [chosen, setVm] = usePick(names);
  const [apiVersion, setApiVersion] = useState<string>(LATEST_API_VERSION);
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (chosen === '') {
      setText(null);
      return;
    }
    const controller = new AbortController();
    api.documentText(chosen, apiVersion, controller.signal).then(
      (body) => {
        setText(body);
        setError(null);
      },
      (err: unknown) => {
        if (!controller.signal.aborted) setError(err instanceof Error ? err.message : String(err));
      },
    );
    return () => controller.abort();
  }, [api, chosen, apiVersion, version]);

  return (
    <div class="document">
      <div class="row">
        <Picker label="VM" value={chosen} options={names} onPick={setVm} />
        <Picker label="api-version" value={apiVersion} options={NEWEST_VERSIONS} onPick={setApiVersion} />
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <pre class="raw" aria-label={`Document of ${chosen} at api-version ${apiVersion}`} data-document-vm={chosen} tabIndex={0}>
        {chosen === '' ? 'No VM to show.' : (text ?? '…')}
      </pre>
    </div>
  );
}
