// The dashboard's entry point, bundled by scripts/build-dashboard.mjs into dist/dashboard/app.js.
import { render } from 'preact';
import { App } from './components/App.js';

render(<App />, document.getElementById('app')!);
