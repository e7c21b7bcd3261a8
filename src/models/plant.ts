/**
 * Planted ground truth of generated models (see docs/models.md, "Planting"): reading a
 * folder's plant.json and building labelled texts whose last token is a planted word.
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import type { Sample } from '../data/types.js';
import { Rng } from '../util/rng.js';
import type { PlantedGroup } from './tinyllama.js';
import { readJsonFile } from '../store/json.js';

export interface PlantInfo {
  blockSize: number;
  seed: number;
  groups: PlantedGroup[];
}

/** plant.json of a generated model folder, or null when nothing was planted. */
export function readPlant(modelDir: string): PlantInfo | null {
  const file = path.join(modelDir, 'plant.json');
  if (!existsSync(file)) return null;
  return readJsonFile(file) as PlantInfo;
}

/** Neutral sentence starts; a planted word is appended at the end. */
const PREFIXES = [
  'We talked about it for a while and then',
  'She opened the window and wrote down',
  'After the meeting the team agreed on',
  'In the morning he remembered',
  'The note on the table said',
  'They walked home and thought about',
  'Everyone in the room was waiting for',
  'My neighbor asked me about',
  '她笑了笑，然后说',
  '我们在公园里谈到',
];

/** Neutral last words (not planted in any group of the shipped models; checked by the tests). */
const CONTROL_WORDS = [' today', ' again', ' now', ' here', ' later', ' together'];

export interface PlantedSampleOptions {
  /** Samples per planted group. */
  perGroup: number;
  /** Also add `perGroup` samples labelled `control` that end in a neutral word. */
  control?: boolean;
  seed: number;
  /** Label axis name (default "group"). */
  axis?: string;
}

/**
 * Labelled samples for planted-region tests: each text of group g ends with one of g's words
 * (a single token), so the last-token MLP input carries g's planted pattern.
 */
export function plantedSamples(plant: PlantInfo, opts: PlantedSampleOptions): Sample[] {
  const rng = new Rng(opts.seed);
  const axis = opts.axis ?? 'group';
  const out: Sample[] = [];
  const groups: { name: string; words: string[] }[] = plant.groups.map((g) => ({ name: g.group, words: g.words }));
  if (opts.control) groups.push({ name: 'control', words: CONTROL_WORDS });
  for (const g of groups) {
    for (let i = 0; i < opts.perGroup; i++) {
      const prefix = PREFIXES[rng.int(PREFIXES.length)]!;
      const word = g.words[rng.int(g.words.length)]!;
      out.push({
        id: `${g.name}-${i}`,
        text: prefix + word,
        labels: { [axis]: g.name },
        provenance: { source: 'plantedSamples', seed: String(opts.seed) },
      });
    }
  }
  return out;
}
