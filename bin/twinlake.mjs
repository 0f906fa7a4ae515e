#!/usr/bin/env node
// The CLI runs the compiled JavaScript in dist/ (built by `npm run build`, which `npm ci` runs
// through `prepare`).
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(compiled)) {
  process.stderr.write('twinlake: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
await import(compiled.href);
