import type { Page } from './page.js';

/** One titled section of the page (see main.ts for how sections are registered). */
export interface Section {
  /** Title shown as the section's heading. */
  title: string;
  /** Element id of the <section> (a link anchor). */
  id: string;
  /**
   * Fill `root` (the section element, heading already in it). Register figures in page.figures
   * and push the promise of every figure drawn at load onto page.ready; write text through
   * textContent only (dom.ts).
   */
  render(page: Page, root: HTMLElement): void;
  /** Whether the page shows the section at all (absent: always). */
  visible?(page: Page): boolean;
}
