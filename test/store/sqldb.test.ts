import { describe, expect, it } from 'vitest';
import { padToPowerOfTwo, statementChunks } from '../../src/store/sqldb.js';

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('statementChunks', () => {
  it.each([
    { n: 0, max: 500, sizes: [] },
    { n: 1, max: 500, sizes: [1] },
    { n: 2, max: 500, sizes: [2] },
    { n: 3, max: 500, sizes: [2, 1] },
    { n: 37, max: 500, sizes: [32, 4, 1] },
    { n: 256, max: 500, sizes: [256] },
    { n: 257, max: 500, sizes: [256, 1] },
    { n: 600, max: 500, sizes: [256, 256, 64, 16, 8] },
    { n: 600, max: 512, sizes: [512, 64, 16, 8] },
    { n: 7, max: 1, sizes: [1, 1, 1, 1, 1, 1, 1] },
    { n: 7, max: 3, sizes: [2, 2, 2, 1] },
  ])('$n items, max $max → $sizes', ({ n, max, sizes }) => {
    const xs = range(n);
    const chunks = statementChunks(xs, max);
    expect(chunks.map((c) => c.length)).toEqual(sizes);
    expect(chunks.flat()).toEqual(xs);
  });

  it('a batch size of 1..1000 gives at most log2(max) + 1 distinct chunk lengths', () => {
    const lengths = new Set(range(1000).flatMap((n) => statementChunks(range(n + 1), 500).map((c) => c.length)));
    expect([...lengths].sort((a, b) => a - b)).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256]);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses max %s, saying what', (max) => {
    expect(() => statementChunks([1], max)).toThrow(/statementChunks: max must be a positive integer/);
  });
});

describe('padToPowerOfTwo', () => {
  it.each([
    { xs: [], out: [] },
    { xs: ['a'], out: ['a'] },
    { xs: ['a', 'b'], out: ['a', 'b'] },
    { xs: ['a', 'b', 'c'], out: ['a', 'b', 'c', 'c'] },
    { xs: ['a', 'b', 'c', 'd', 'e'], out: ['a', 'b', 'c', 'd', 'e', 'e', 'e', 'e'] },
  ])('$xs → $out', ({ xs, out }) => {
    expect(padToPowerOfTwo(xs)).toEqual(out);
  });
});
