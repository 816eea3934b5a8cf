// The control API, handed down to every form through Preact's context.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ControlApi } from './api.js';

export const ApiContext = createContext<ControlApi | null>(null);

export function useApi(): ControlApi {
  const api = useContext(ApiContext);
  if (!api) throw new Error('useApi() outside <ApiContext.Provider>');
  return api;
}
