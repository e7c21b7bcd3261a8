import { describe, it, expect } from 'vitest';
import { csvField } from '../../src/util/csv.js';
import { parseCsv } from '../../src/data/generic.js';

describe('csvField', () => {
  it('fields with commas, quotes and line breaks read back unchanged with an RFC 4180 parser', () => {
    const rows = [
      ['plain', 'a,b', 'say "hi"', 'two\nlines', 'cr\rinside', 'crlf\r\nend'],
      ['', ' spaced ', '"', ',', 'x'],
    ];
    const text = rows.map((r) => r.map(csvField).join(',')).join('\n') + '\n';
    const { records, problems } = parseCsv(text);
    expect(problems).toEqual([]);
    expect(records.map((r) => r.fields)).toEqual(rows);
  });

  it('numbers as written by String(); null and undefined as empty fields', () => {
    expect([1.5, -0.25, 1e-7, null, undefined, 0].map(csvField).join(',')).toBe('1.5,-0.25,1e-7,,,0');
  });
});
