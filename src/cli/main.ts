#!/usr/bin/env node
// The package's bin. Exits explicitly so a lingering handle cannot keep a finished command alive.
import { run } from './program.js';

process.exit(await run(process.argv.slice(2)));
