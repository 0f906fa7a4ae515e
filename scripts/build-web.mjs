#!/usr/bin/env node
// The web console's build: `tsc -p web/tsconfig.json` compiles web/src/*.ts into dist/web/; this
// copies the page and its style sheet beside them. The server serves dist/web/ as it is.
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const out = join(root, 'dist', 'web');
mkdirSync(out, { recursive: true });
for (const name of ['index.html', 'style.css']) copyFileSync(join(root, 'web', name), join(out, name));
