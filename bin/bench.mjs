#!/usr/bin/env node
// `npm run bench`: runs the benchmarks in bench/ through tsx.
import { register } from 'tsx/esm/api';
register();
await import('../bench/run.ts');
