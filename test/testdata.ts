import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Where the other engines' test tables live: ../shared/testdata beside the checkout, or
 * $TWINLAKE_TESTDATA. Without them the conformance tests skip (and the conformance reporter says
 * how many); the rest still runs. Kept apart from helpers.ts so the reporter can use it without
 * loading the test runner's API.
 */
export const repoRoot = resolve(import.meta.dirname, '..');
export const testdata = resolve(repoRoot, process.env.TWINLAKE_TESTDATA || '../shared/testdata');
export const hasTestdata = existsSync(testdata);
