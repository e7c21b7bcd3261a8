/** "Provenance": per run, where every number of the page came from (run, model, data, settings). */
import type { Section } from '../section.js';
import { el, table, columns } from '../dom.js';

export const provenanceSection: Section = {
  title: 'Provenance',
  id: 'provenance',
  render(page, root) {
    const cols = columns(root, page.runs.length);
    page.runs.forEach((run) => {
      const cell = el('div');
      cols.appendChild(cell);
      if (page.compare) cell.appendChild(el('h3', null, run.name));
      cell.appendChild(table(['', ''], run.provenance, 'prov'));
    });
  },
};
