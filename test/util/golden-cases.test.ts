import { describe, it, expect } from 'vitest';
import { cases } from '../goldens/cases.js';

describe('golden lists', () => {
  it('an empty or missing list is an error, not a loop over nothing', () => {
    expect(() => cases({ rows: [] }, 'rows')).toThrow(/list "rows" has 0 cases, at least 1 expected/);
    expect(() => cases({ rows: [1] }, 'row')).toThrow(/no list "row" \(keys: rows\)/);
    expect(() => cases({ rows: 'x' }, 'rows')).toThrow(/no list "rows"/);
    expect(cases({ rows: [1, 2] }, 'rows')).toEqual([1, 2]);
  });
});
