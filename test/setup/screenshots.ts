import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };

/**
 * The page as it is now, for a person to review, at phone and desktop width: `<name>-390.png`
 * and `<name>-1280.png` in `dir`. Without a `dir` (as in CI) nothing is written. The page is left
 * at phone width.
 */
export async function screenshotWidths(page: Page, dir: string | undefined, name: string): Promise<void> {
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  for (const viewport of [PHONE, DESKTOP]) {
    await page.setViewportSize(viewport);
    await page.screenshot({ path: join(dir, `${name}-${viewport.width}.png`), fullPage: true });
  }
  await page.setViewportSize(PHONE);
}
