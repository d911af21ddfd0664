/**
 * A headless browser for the lab: screenshots of console pages (the experiment's moments) and the
 * browser tests' page checks. It drives the system's Chromium (Debian's `chromium` package) through
 * puppeteer-core, which downloads no browser of its own; without either, openBrowser says why and
 * callers go on without screenshots.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Browser, Page } from 'puppeteer-core';

/** Where Debian and other distributions put Chromium or Chrome; TESSERA_CHROMIUM overrides. */
const BROWSER_PATHS = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];
/** The width the consoles must fit (issue 59: a 1,400-pixel window). */
export const CONSOLE_WIDTH_PX = 1400;
const PAGE_TIMEOUT_MS = 30_000;

export function findBrowserPath(): string | undefined {
  const env = process.env['TESSERA_CHROMIUM'];
  if (env) return fs.existsSync(env) ? env : undefined;
  return BROWSER_PATHS.find((p) => fs.existsSync(p));
}

export interface LabBrowser {
  readonly browser: Browser;
  /** A new page of CONSOLE_WIDTH_PX × height, collecting the page's script errors. */
  newPage(height?: number): Promise<{ page: Page; errors: string[] }>;
  /** Loads `url` and writes a PNG of the whole page to `file`. */
  screenshot(url: string, file: string): Promise<void>;
  close(): Promise<void>;
}

/** Opens headless Chromium, or says why it cannot (no browser installed, puppeteer-core missing). */
export async function openBrowser(): Promise<LabBrowser | { reason: string }> {
  const exe = findBrowserPath();
  if (!exe) return { reason: `no Chromium found (${BROWSER_PATHS.join(', ')} or TESSERA_CHROMIUM); install it with: apt-get install -y chromium` };
  let puppeteer: typeof import('puppeteer-core');
  try {
    puppeteer = await import('puppeteer-core');
  } catch {
    return { reason: 'the puppeteer-core package is not installed (a devDependency: npm install)' };
  }
  // --no-sandbox: CI and labs run as root, where Chromium's sandbox refuses to start.
  const browser = await puppeteer.launch({ executablePath: exe, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const newPage = async (height = 900): Promise<{ page: Page; errors: string[] }> => {
    const page = await browser.newPage();
    await page.setViewport({ width: CONSOLE_WIDTH_PX, height });
    page.setDefaultTimeout(PAGE_TIMEOUT_MS);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => {
      // The browser asks for /favicon.ico by itself on pages outside the consoles' layout (raw JSON,
      // text): its 404 is not the page's doing.
      if (m.type() === 'error' && !(m.location().url ?? '').endsWith('/favicon.ico')) errors.push(`${m.text()}${m.location().url ? ` (${m.location().url})` : ''}`);
    });
    return { page, errors };
  };
  return {
    browser,
    newPage,
    async screenshot(url, file) {
      const { page } = await newPage();
      try {
        await page.goto(url, { waitUntil: 'load' });
        fs.mkdirSync(path.dirname(file), { recursive: true });
        await page.screenshot({ path: file as `${string}.png`, fullPage: true });
      } finally {
        await page.close();
      }
    },
    close: () => browser.close(),
  };
}

/** How far a loaded page overflows the viewport's width (0 when it fits: no horizontal scroll). */
export async function horizontalOverflowPx(page: Page): Promise<number> {
  return page.evaluate('Math.max(0, document.documentElement.scrollWidth - document.documentElement.clientWidth)') as Promise<number>;
}
