import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/data/index.js';
import { readSocialEval, splitQuestion, resolveChoiceLabels } from '../../src/data/socialeval.js';
import { canonicalizeAbility, normalizeLabel } from '../../src/data/labels.js';
import { ABILITIES, ASPECTS } from '../../src/data/bessi.js';
import { LABEL_TABLE } from './socialeval-labels.table.js';

const SHARED = path.resolve(__dirname, '../../../shared/socialeval/worldtree_data');
const HAVE = existsSync(SHARED);
if (!HAVE)
  console.log(`test/data/socialeval.test.ts: skipped, ${SHARED} is absent (the published SocialEval world trees)`);

const TABLE = new Map(LABEL_TABLE);
const ASPECT_OF = new Map(ABILITIES.map((a) => [a.name, a.aspect]));

/** A direct walk over the raw files, independent of the adapter. */
function rawChoices() {
  const out: { file: string; lang: 'en' | 'zh'; node: number; choice: any }[] = [];
  for (const f of readdirSync(SHARED).sort()) {
    const d = JSON.parse(readFileSync(path.join(SHARED, f), 'utf8'));
    const lang = f.includes('_en_') ? 'en' : 'zh';
    for (const n of d.interactive_plot)
      for (const c of n.choices ?? [])
        if (c.type === 'skill choice') out.push({ file: f, lang, node: n.cid, choice: c });
  }
  return out;
}

describe.skipIf(!HAVE)('socialeval: adapter on ../shared/socialeval', () => {
  const choices = HAVE ? rawChoices() : [];
  const question = (c: any) => (c.confusion ?? []).find((q: any) => q.type === 'skill question');

  it('the hand-checked table covers every distinct raw label, and the canonicalizer reproduces it', () => {
    const single = { en: new Set<string>(), zh: new Set<string>() };
    const all = new Set<string>();
    for (const { lang, choice } of choices) {
      for (const s of choice.skill ?? []) all.add(s);
      if ((choice.skill ?? []).length === 1) single[lang].add(choice.skill[0]);
      const q = question(choice);
      for (const s of q?.skill ?? []) all.add(s);
      for (const s of q ? splitQuestion(q.question).explicit : []) all.add(s);
    }
    // The published trees spell single-ability labels in 188 (English) and 332 (Chinese trees) ways.
    expect(single.en.size).toBe(188);
    expect(single.zh.size).toBe(332);
    for (const s of all) expect(TABLE.has(s), JSON.stringify(s)).toBe(true);
    for (const [raw, want] of LABEL_TABLE) {
      const r = canonicalizeAbility(raw);
      expect(r.ability ?? 'EXCLUDED', JSON.stringify(raw)).toBe(want);
    }
    // Sanity of the table itself: every target is a BESSI ability, and a label whose
    // normalized form is an ability name maps to that name.
    for (const [raw, want] of LABEL_TABLE) {
      if (want !== 'EXCLUDED') expect(ASPECT_OF.has(want)).toBe(true);
      const exact = ABILITIES.find((a) => normalizeLabel(a.name) === normalizeLabel(raw));
      if (exact) expect(want).toBe(exact.name);
    }
  });

  it('resolves at least 98% of single-ability choices in each language, none to a wrong ability', () => {
    const r = readSocialEval(SHARED, { template: '{question}\n{response}', includeComposite: true });
    expect(r.problems).toEqual([]);
    for (const lang of ['en', 'zh'] as const) {
      const st = r.stats[lang];
      expect(st.singleResolved / st.single, lang).toBeGreaterThanOrEqual(0.98);
      // Independent: single-string choices resolved by the table alone (no repairs).
      const simple = choices.filter((c) => c.lang === lang && (c.choice.skill ?? []).length === 1);
      const byTable = simple.filter((c) => TABLE.get(c.choice.skill[0]) !== 'EXCLUDED');
      expect(byTable.length / simple.length).toBeGreaterThanOrEqual(0.98);
    }
    const byId = new Map(choices.map((c) => [`${c.file.replace(/\.json$/, '')}/${c.node}/${c.choice.cid}`, c]));
    let repaired = 0;
    for (const s of r.samples) {
      const c = byId.get(s.id)!;
      expect(c, s.id).toBeDefined();
      const raw: string[] = c.choice.skill ?? [];
      const want = new Set(raw.map((x) => TABLE.get(x)!).filter((x) => x !== 'EXCLUDED'));
      const got = s.labels.ability.split(' + ');
      // Every label the table can read must be among the sample's abilities.
      for (const w of want) expect(got, s.id).toContain(w);
      if (want.size < got.length || raw.length === 0) {
        repaired++;
        // Repaired labels come from the same choice's question entry: its skill list, the
        // fragment after "capacity for", or a #skill# marker.
        const q = question(c.choice);
        const sq = splitQuestion(q.question);
        const fromQuestion = new Set(
          [...(q.skill ?? []), ...sq.explicit].map((x: string) => canonicalizeAbility(x).ability),
        );
        for (const g of got) {
          const viaFragment = sq.fragments.length > 0 &&
            normalizeLabel(g).endsWith(normalizeLabel(sq.fragments.join(' ')).replace(/ skill$/, ''));
          expect(fromQuestion.has(g) || viaFragment || want.has(g), `${s.id} ${g}`).toBe(true);
        }
      }
      expect(s.labels.aspect.split(' + ')).toEqual([...new Set(got.map((g) => ASPECT_OF.get(g)!))]);
    }
    expect(repaired).toBeGreaterThan(0);
  });

  it('counts per aspect and language (default: composite items left out)', async () => {
    const ds = await loadDataset(`socialeval:${SHARED}`);
    const got: Record<string, Record<string, number>> = { en: {}, zh: {} };
    for (const s of ds.samples)
      got[s.labels.language][s.labels.aspect] = (got[s.labels.language][s.labels.aspect] ?? 0) + 1;
    // The published trees as read by this adapter.
    expect(got).toEqual({
      en: { 'Self-Management': 756, Cooperation: 439, 'Social Engagement': 348, Innovation: 147,
        'Emotional Resilience': 295 },
      zh: { 'Self-Management': 815, Cooperation: 467, 'Social Engagement': 387, Innovation: 160,
        'Emotional Resilience': 322 },
    });
    // Independent check on the plain choices (one label the table reads, a dict utterance,
    // a question): each is a sample with that ability.
    const ids = new Map(ds.samples.map((s) => [s.id, s]));
    let plain = 0;
    for (const c of choices) {
      const raw = c.choice.skill ?? [];
      if (raw.length !== 1 || TABLE.get(raw[0]) === 'EXCLUDED') continue;
      const content = c.choice.content;
      if (Array.isArray(content) || content?.role === 'stage' || !String(content?.content ?? '').trim()) continue;
      const q = question(c.choice);
      if (!q || !splitQuestion(q.question).question) continue;
      const s = ids.get(`${c.file.replace(/\.json$/, '')}/${c.node}/${c.choice.cid}`);
      expect(s, `${c.file} ${c.node} ${c.choice.cid}`).toBeDefined();
      expect(s!.labels.ability).toBe(TABLE.get(raw[0]));
      plain++;
    }
    expect(plain).toBeGreaterThan(3800);
    // Nothing silently lost: every skill choice is a sample or an exclusion.
    expect(ds.samples.length + ds.excluded.length).toBe(choices.length);
    for (const a of ASPECTS) expect(got.en[a]).toBeGreaterThan(0);
  });

  it('builds text from the question (marker stripped) and the correct utterance, with provenance and distractors', async () => {
    const ds = await loadDataset(`socialeval:${SHARED}?lang=en`);
    expect(ds.samples.every((s) => s.labels.language === 'en')).toBe(true);
    const byId = new Map(choices.map((c) => [`${c.file.replace(/\.json$/, '')}/${c.node}/${c.choice.cid}`, c]));
    for (const s of ds.samples) {
      expect(s.text).not.toMatch(/#question#|#skill#/);
      const c = byId.get(s.id)!;
      const content = c.choice.content;
      const utter = Array.isArray(content)
        ? content.filter((x: any) => x.role !== 'state').map((x: any) => x.content).join(' ')
        : content.content;
      expect(s.text.endsWith('\n' + utter.trim()), s.id).toBe(true);
      expect(s.provenance).toEqual({ file: c.file, node: String(c.node), choice: String(c.choice.cid) });
      const distract = (c.choice.confusion ?? []).filter((x: any) =>
        x.type === 'skill confusion' && typeof x.content?.content === 'string'
      ).map((x: any) => x.content.content.trim());
      expect(s.extras!.distractors).toEqual(distract);
    }
    // The one utterance given as a list: the state entry is dropped.
    const listed = ds.samples.find((s) => s.id === '[1,0]_en_example_0/13/15')!;
    expect(listed.text).toBe(
      'How does An Lingrong demonstrate her capacity for independent thinking?\nPrince Guo, you are indeed just as the rumors say, charming and elegant.',
    );
    // "Capacity for " on the choice, "Capacity for \rIndependence" on its question.
    expect(ds.samples.find((s) => s.id === '[1,0]_en_example_11/1/2')!.labels.ability).toBe(
      'Capacity for Independence',
    );
    // "capacity for " completed by the "trust " entry of the question list.
    expect(ds.samples.find((s) => s.id === '[0,-1]_en_example_8/9/10')!.labels.ability).toBe('Capacity for Trust');
    expect(ds.samples.find((s) => s.id === '[0,-1]_en_example_8/9/11')!.labels.ability).toBe(
      'Capacity for Social Warmth',
    );
  });

  it('excludes stage placeholders, composites and unreadable labels with reasons, and filters', async () => {
    const ds = await loadDataset(`socialeval:${SHARED}?lang=zh`);
    const stage = ds.excluded.filter((e) => /stage placeholder/.test(e.reason));
    const rawStage = choices.filter((c) => c.lang === 'zh' && c.choice.content?.role === 'stage');
    expect(stage.length).toBeGreaterThan(0);
    expect(stage.length).toBeLessThanOrEqual(rawStage.length);
    for (const e of ds.excluded) {
      expect(e.file).toMatch(/_cn_/);
      expect(e.where).toMatch(/^node \S+, choice \S+$/);
      expect(e.reason.length).toBeGreaterThan(5);
    }
    const comp = ds.excluded.filter((e) => e.reason.startsWith('composite'));
    const inc = await loadDataset(`socialeval:${SHARED}?lang=zh&composite=include`);
    const incIds = new Set(inc.samples.map((s) => s.id));
    const incExcl = new Map(inc.excluded.map((e) => [e.id, e.reason]));
    let gained = 0;
    for (const e of comp) {
      if (incIds.has(e.id)) gained++;
      else expect(incExcl.get(e.id), e.id).not.toMatch(/^composite/);
    }
    expect(gained).toBeGreaterThan(0);
    expect(inc.samples.length).toBe(ds.samples.length + gained);
    expect(inc.samples.some((s) => s.labels.ability.includes(' + '))).toBe(true);
    const self = await loadDataset(`socialeval:${SHARED}?orientation=self&aspect=Innovation`);
    expect(self.samples.length).toBeGreaterThan(0);
    expect(self.samples.every((s) => s.labels.orientation.startsWith('[1,') && s.labels.aspect === 'Innovation')).toBe(
      true,
    );
    const exact = await loadDataset(`socialeval:${SHARED}?orientation=[-1,1]`);
    expect(new Set(exact.samples.map((s) => s.labels.orientation))).toEqual(new Set(['[-1,1]']));
    const agree = await loadDataset(`socialeval:${SHARED}?agree=1&lang=zh`);
    expect(agree.samples.length).toBeLessThan(ds.samples.length);
    expect(agree.excluded.some((e) => /labels disagree/.test(e.reason))).toBe(true);
    const sc = await loadDataset(`socialeval:${SHARED}?scenario=1&speaker=1&lang=zh`);
    const first = sc.samples[0];
    expect(first.text.split('\n').length).toBeGreaterThanOrEqual(3);
    expect(first.text.endsWith(`${first.extras!.speaker}: ${first.extras!.response}`)).toBe(true);
  });
});

describe.skipIf(!HAVE)('socialeval: world trees as groups', () => {
  it('gives each item its world tree (its file, read here from the raw files) as item_group, by default; group=none leaves it out', async () => {
    const ds = await loadDataset(`socialeval:${SHARED}?lang=en`);
    expect(ds.axes).toEqual(['aspect', 'ability', 'language', 'orientation', 'item_group']);
    const files = new Set(readdirSync(SHARED).map((f) => f.replace(/\.json$/, '')));
    for (const s of ds.samples) {
      expect(files.has(s.labels.item_group!), s.id).toBe(true);
      expect(s.provenance!.file).toBe(`${s.labels.item_group}.json`);
    }
    // 1,985 English items in 122 trees: most trees hold four or five aspects
    expect(ds.samples.length).toBe(1985);
    expect(new Set(ds.samples.map((s) => s.labels.item_group)).size).toBe(122);
    // group=tree says the default; group=none: the same items without the axis
    const tree = await loadDataset(`socialeval:${SHARED}?lang=en&group=tree`);
    expect(tree.samples).toEqual(ds.samples);
    const none = await loadDataset(`socialeval:${SHARED}?lang=en&group=none`);
    expect(none.axes).toEqual(['aspect', 'ability', 'language', 'orientation']);
    expect(none.samples.map((s) => s.id)).toEqual(ds.samples.map((s) => s.id));
    expect(none.samples.some((s) => 'item_group' in s.labels)).toBe(false);
    await expect(loadDataset(`socialeval:${SHARED}?lang=en&group=story`)).rejects.toThrow(
      /the groupings are group=tree .* and group=none/,
    );
  });

  it("a swap keeps each sample's response tree (its own sample and its swapped one alike)", async () => {
    const ds = await loadDataset(`socialeval:${SHARED}?lang=en&swap=1`);
    expect(ds.axes).toContain('item_group');
    for (const s of ds.samples) expect(s.labels.item_group, s.id).toBe(s.id.slice(0, s.id.indexOf('/')));
  });
});

describe('socialeval: label resolution of one choice (no shared data needed)', () => {
  it('completes a truncated label from the question list and falls back on the question label', () => {
    expect(resolveChoiceLabels(['capacity for '], ['capacity for '], ['trust '], [])).toMatchObject({
      abilities: ['Capacity for Trust'],
    });
    expect(resolveChoiceLabels(['Capacity for '], ['Capacity for \rIndependence'], [], [])).toMatchObject({
      abilities: ['Capacity for Independence'],
    });
    expect(resolveChoiceLabels([], [], [], ['Teamwork Skill'])).toMatchObject({ abilities: ['Teamwork Skill'] });
    expect(resolveChoiceLabels(['capacity for '], ['capacity for '], [], [])).toHaveProperty('reason');
    expect(resolveChoiceLabels([], [], [], [])).toEqual({ reason: 'no skill label on the choice or its question' });
    expect(resolveChoiceLabels(['Time Management', 'time management '], [], [], [])).toMatchObject({
      abilities: ['Time Management'],
    });
    expect(resolveChoiceLabels(['Teamwork Skill'], ['Persuasive Skill'], [], [], true)).toHaveProperty('reason');
    expect(resolveChoiceLabels(['Teamwork Skill'], ['Persuasive Skill'], [], [])).toMatchObject({
      abilities: ['Teamwork Skill'],
      questionSkill: ['Persuasive Skill'],
    });
  });

  it('splits question lists into text, label fragments, #skill# labels and #state# markers', () => {
    expect(splitQuestion(['#question#大白怎么说，才能体现他理解并欣赏不同', ' 的文化背景？'])).toEqual({
      question: '大白怎么说，才能体现他理解并欣赏不同 的文化背景？',
      fragments: [],
      explicit: [],
    });
    expect(
      splitQuestion(['#question# How can Dabai express that he understands and appreciates different',
        ' cultural backgrounds?']).question,
    ).toBe('How can Dabai express that he understands and appreciates different cultural backgrounds?');
    expect(splitQuestion(['#question#How does Gin express his trust in Vodka?', 'Trust', ''])).toEqual({
      question: 'How does Gin express his trust in Vodka?',
      fragments: ['Trust'],
      explicit: [],
    });
    expect(splitQuestion(['#question#Q?', ' #skill#Leadership skill', '#state#(1,1,1)\r'])).toEqual({ question: 'Q?',
      fragments: [], explicit: ['Leadership skill'] });
    expect(splitQuestion('#question# What should Ed do?    #skill#Capacity for Trust')).toEqual({
      question: 'What should Ed do?',
      fragments: [],
      explicit: ['Capacity for Trust'],
    });
    expect(splitQuestion([])).toEqual({ question: '', fragments: [], explicit: [] });
  });
});
