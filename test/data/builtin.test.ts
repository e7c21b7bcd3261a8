import { describe, expect, it } from 'vitest';
import { loadDataset, DEFAULT_DATASET } from '../../src/data/index.js';
import { builtinItems } from '../../src/data/builtin.js';
import { SOCIAL_EN, SOCIAL_ZH } from '../../src/data/builtin/social.js';
import { ABILITIES, ASPECTS } from '../../src/data/bessi.js';
import { canonicalizeAbility } from '../../src/data/labels.js';
import { UsageError } from '../../src/util/errors.js';

describe('builtin:social', () => {
  it('is the default and loads with builtin:, builtin and builtin:social alike', async () => {
    expect(DEFAULT_DATASET).toBe('builtin:social');
    const a = await loadDataset('builtin:social');
    const b = await loadDataset('builtin:');
    const c = await loadDataset('builtin');
    expect(b.samples).toEqual(a.samples);
    expect(c.samples).toEqual(a.samples);
    expect(a.spec).toBe('builtin:social');
    expect(a.axes).toEqual(['aspect', 'ability', 'language', 'orientation']);
    expect(a.excluded).toEqual([]);
  });

  it('has at least 20 English and 10 Chinese items per aspect, counted from the source tables', async () => {
    const ds = await loadDataset('builtin:social');
    // Independent count straight from the table lines.
    const count = (lines: readonly string[], abilityField: number) => {
      const m = new Map<string, number>();
      for (const l of lines) {
        const ab = l.split('|')[abilityField];
        const asp = ABILITIES.find((a) => a.name === ab)!.aspect;
        m.set(asp, (m.get(asp) ?? 0) + 1);
      }
      return m;
    };
    const en = count(SOCIAL_EN, 0);
    const zh = count(SOCIAL_ZH, 1);
    for (const asp of ASPECTS) {
      expect(en.get(asp)!).toBeGreaterThanOrEqual(20);
      expect(zh.get(asp)!).toBeGreaterThanOrEqual(10);
      expect(ds.samples.filter((s) => s.labels.aspect === asp && s.labels.language === 'en').length).toBe(en.get(asp));
      expect(ds.samples.filter((s) => s.labels.aspect === asp && s.labels.language === 'zh').length).toBe(zh.get(asp));
    }
    expect(ds.samples.length).toBe(SOCIAL_EN.length + SOCIAL_ZH.length);
  });

  it('labels every item with a valid ability of its aspect, a language and an orientation', async () => {
    const ds = await loadDataset('builtin:social');
    const ids = new Set<string>();
    const texts = new Set<string>();
    for (const s of ds.samples) {
      const a = ABILITIES.find((x) => x.name === s.labels.ability);
      expect(a, s.id).toBeDefined();
      expect(s.labels.aspect).toBe(a!.aspect);
      expect(['en', 'zh']).toContain(s.labels.language);
      expect(['self', 'altruism']).toContain(s.labels.orientation);
      expect(s.text).toBe(`${s.extras!.question}\n${s.extras!.response}`);
      const cjk = /[\u4e00-\u9fff]/.test(s.text);
      expect(cjk, s.id).toBe(s.labels.language === 'zh');
      ids.add(s.id);
      texts.add(s.text);
    }
    expect(ids.size).toBe(ds.samples.length);
    expect(texts.size).toBe(ds.samples.length);
    // Varied: both orientations in every aspect and language, many abilities used.
    for (const asp of ASPECTS)
      for (const lang of ['en', 'zh']) {
        const o = new Set(
          ds.samples.filter((s) => s.labels.aspect === asp && s.labels.language === lang).map((s) =>
            s.labels.orientation
          ),
        );
        expect(o.size, `${asp} ${lang}`).toBe(2);
      }
    expect(new Set(ds.samples.map((s) => s.labels.ability)).size).toBe(32);
  });

  it('writes each Chinese item with a Chinese ability name that resolves to its ability', () => {
    const zh = builtinItems().filter((i) => i.language === 'zh');
    expect(zh.length).toBe(SOCIAL_ZH.length);
    for (const it of zh) expect(canonicalizeAbility(it.zhLabel!).ability, it.zhLabel).toBe(it.ability);
  });

  it('applies the template options and the filters', async () => {
    const sc = await loadDataset('builtin:social?scenario=1&speaker=1&lang=zh');
    const s0 = sc.samples[0];
    expect(s0.text).toBe(
      `${s0.extras!.scenario}\n${s0.extras!.question}\n${s0.extras!.speaker}: ${s0.extras!.response}`,
    );
    const custom = await loadDataset('builtin:social?template=Q%3A {question}\\nA%3A {response}&aspect=innovation');
    expect(custom.samples.every((s) => s.labels.aspect === 'Innovation')).toBe(true);
    expect(custom.samples[0].text).toBe(
      `Q: ${custom.samples[0].extras!.question}\nA: ${custom.samples[0].extras!.response}`,
    );
    const alt = await loadDataset('builtin:social?orientation=altruism&lang=en');
    const all = await loadDataset('builtin:social');
    expect(alt.samples.length).toBe(
      all.samples.filter((s) => s.labels.orientation === 'altruism' && s.labels.language === 'en').length,
    );
    const two = await loadDataset('builtin:social?aspect=Cooperation,Self-Management');
    expect(new Set(two.samples.map((s) => s.labels.aspect))).toEqual(new Set(['Cooperation', 'Self-Management']));
  });

  it('refuses unknown names, options and values with usage errors', async () => {
    await expect(loadDataset('builtin:nope')).rejects.toBeInstanceOf(UsageError);
    await expect(loadDataset('builtin:social?colour=red')).rejects.toThrow(/unknown option "colour"/);
    await expect(loadDataset('builtin:social?lang=fr')).rejects.toThrow(/lang=en or lang=zh/);
    await expect(loadDataset('builtin:social?aspect=Charm')).rejects.toThrow(/unknown aspect/);
    await expect(loadDataset('builtin:social?template={question}')).rejects.toThrow(/no \{response\}/);
    await expect(loadDataset('builtin:social?template={q} {response}')).rejects.toThrow(/placeholder \{q\}/);
    await expect(loadDataset('nokind')).rejects.toThrow(/has no kind/);
    await expect(loadDataset('builtin:social?template=100% {response}')).rejects.toThrow(/bad percent-encoding/);
    await expect(loadDataset('builtin:social?lang=en&lang=zh')).rejects.toThrow(/gives lang twice/);
    await expect(loadDataset('parquet:x')).rejects.toThrow(/unknown dataset kind/);
  });
});
