// Generated from src/analysis/registry.ts by `npx tsx src/analysis/generate.ts`; do not edit.
// The page's sections in page order: each registered analysis's, then the run's provenance.
import type { Section } from './section.js';
import { scatterSection } from './sections/scatter.js';
import { regionsSection } from './sections/regions.js';
import { metricsSection } from './sections/metrics.js';
import { attentionSection } from './sections/attention.js';
import { evalSection } from './sections/eval.js';
import { ablateSection } from './sections/ablate.js';
import { lensSection } from './sections/lens.js';
import { provenanceSection } from './sections/provenance.js';

/** Id and title of each section, as registered (the Section objects must say the same). */
export const SECTION_IDS: { id: string; title: string }[] = [{ id: 'scatter', title: 'Representations: t-SNE' }, { id: 'regions', title: 'Neuron regions: set differences per pair' }, { id: 'metrics', title: 'Metrics' }, { id: 'attention', title: 'Attention' }, { id: 'evaluation', title: 'Evaluation' }, { id: 'ablation', title: 'Ablation' }, { id: 'lens', title: 'Logit lens' }, { id: 'provenance', title: 'Provenance' }];

export const SECTIONS: Section[] = [
  scatterSection,
  regionsSection,
  metricsSection,
  attentionSection,
  evalSection,
  ablateSection,
  lensSection,
  provenanceSection,
];
