/**
 * A headless Chromium for browser tests: `CHROMIUM_PATH` when set, Debian's
 * `/usr/bin/chromium` when installed, and otherwise the Chromium that the
 * `@sparticuz/chromium` package ships inside itself (unpacked to the temp folder on
 * first use), so `npm test` needs nothing beyond Node and npm.
 */
import { existsSync } from 'node:fs';
import sparticuz from '@sparticuz/chromium';
import { chromium, type Browser } from 'playwright-core';

const DEBIAN_CHROMIUM = '/usr/bin/chromium';

/** Where the Chromium binary comes from, and its path. */
export async function chromiumExecutable(): Promise<{ path: string; source: string }> {
  if (process.env.CHROMIUM_PATH) return { path: process.env.CHROMIUM_PATH, source: 'CHROMIUM_PATH' };
  if (existsSync(DEBIAN_CHROMIUM)) return { path: DEBIAN_CHROMIUM, source: 'Debian package' };
  return { path: await sparticuz.executablePath(), source: '@sparticuz/chromium' };
}

/**
 * Launch headless Chromium with the web's security model intact (no
 * `--disable-web-security`, which the serverless package's default flags include), so
 * cross-origin tests see real CORS enforcement.
 */
export async function launchChromium(): Promise<Browser> {
  const { path } = await chromiumExecutable();
  return chromium.launch({
    executablePath: path,
    headless: true,
    args: [
      '--no-sandbox',
      '--no-zygote',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
