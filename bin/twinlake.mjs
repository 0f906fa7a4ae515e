#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx, so a checkout works right after `npm ci`.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli/main.ts');
