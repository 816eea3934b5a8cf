// A labelled choice among names that come and go with the fleet.
import { useState } from 'preact/hooks';

/** The chosen name; one that has gone from `options` falls back to the first. */
export function usePick(options: readonly string[]): [string, (name: string) => void] {
  const [picked, setPicked] = useState('');
  return [options.includes(picked) ? picked : (options[0] ?? ''), setPicked];
}

export function Picker({
  label,
  value,
  options,
  onPick,
}: {
  label: string;
  value: string;
  options: readonly string[];
  onPick(name: string): void;
}) {
  return (
    <label>
      {label}{' '}
      <select value={value} onChange={(e) => onPick(e.currentTarget.value)}>
        {options.map((name) => (
          <option key={name}>{name}</option>
        ))}
      </select>
    </label>
  );
}
