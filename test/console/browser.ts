import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { repoRoot } from '../helpers.ts';

/** Debian's chromium package; playwright-core drives it (it downloads no browser of its own). */
export const CHROMIUM = process.env.TWINLAKE_CHROMIUM ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or undefined when they can. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install -y --no-install-recommends chromium)`;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Where the test run leaves its screenshots (git-ignored: .tmp/). */
export function screenshotDir(): string {
  const dir = join(repoRoot, '.tmp', 'console-screenshots');
  mkdirSync(dir, { recursive: true });
  return dir;
}
