/**
 * The literal matchers agree with String.prototype.includes / startsWith / endsWith (what CEL's contains,
 * startsWith and endsWith run) and report each matching literal exactly once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AffixMatcher, SubstringMatcher } from '../../src/routing/literal-matcher.js';

function collect(m: { forEachIn(s: string, f: (i: number) => void): void }, s: string): number[] {
  const out: number[] = [];
  m.forEachIn(s, (i) => out.push(i));
  return out;
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const expected = (literals: string[], s: string, p: (s: string, lit: string) => boolean) =>
  literals.flatMap((l, i) => (p(s, l) ? [i] : []));

describe('SubstringMatcher', () => {
  it.each<[string, string[], string, string[]]>([
    ['classic overlap', ['he', 'she', 'his', 'hers'], 'ushers', ['he', 'she', 'hers']],
    ['literal inside another, found through the dictionary link', ['abcd', 'bc', 'c'], 'xbcx', ['bc', 'c']],
    ['failure link back into a shorter literal', ['aab', 'ab'], 'aaab', ['aab', 'ab']],
    ['repeated occurrences reported once', ['a', 'aa', 'aaa'], 'a'.repeat(50), ['a', 'aa', 'aaa']],
    ['empty literal matches every string, even the empty one', ['', 'x'], '', ['']],
    ['literal longer than the string', ['abcdef'], 'abc', []],
    ['no literal', [], 'anything', []],
    ['code units: é as e + combining accent contains e', ['e', 'é'], 'cafe\u0301', ['e']],
    ['code units: precomposed é does not contain e', ['e', 'é'], 'café', ['é']],
    ['surrogate pairs', ['😀', '\ud83d'], 'a😀b', ['😀', '\ud83d']],
    ['case sensitive', ['ACME'], 'acme ACM', []],
  ])('%s', (_n, literals, s, want) => {
    const got = collect(new SubstringMatcher(literals), s).map((i) => literals[i]);
    expect(got.sort()).toEqual([...want].sort());
  });

  it('rejects duplicate literals', () => {
    expect(() => new SubstringMatcher(['a', 'b', 'a'])).toThrow(/duplicate literal "a"/);
  });

  it('is reusable: each scan reports its own literals once', () => {
    const m = new SubstringMatcher(['ab', 'b', 'c']);
    expect(sorted(collect(m, 'abab'))).toEqual([0, 1]);
    expect(sorted(collect(m, 'cc'))).toEqual([2]);
    expect(sorted(collect(m, 'abc'))).toEqual([0, 1, 2]);
  });

  it('equals includes() for random literal sets and strings (small alphabet: many overlaps)', () => {
    const chars = fc.constantFrom('a', 'b', 'c', 'é', '\u0301', '😀', '\ud83d');
    const str = (max: number) => fc.array(chars, { maxLength: max }).map((xs) => xs.join(''));
    fc.assert(
      fc.property(fc.uniqueArray(str(5), { maxLength: 30 }), fc.array(str(40), { minLength: 1, maxLength: 5 }), (literals, strings) => {
        const m = new SubstringMatcher(literals);
        for (const s of strings) {
          const got = collect(m, s);
          expect(got.length).toBe(new Set(got).size);
          expect(sorted(got)).toEqual(expected(literals, s, (x, l) => x.includes(l)));
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('wide nodes (more children than a sibling list holds)', () => {
  it('equals includes() / startsWith() / endsWith() over a large alphabet', () => {
    const chars = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzé😀'.split(''), '\u0301');
    const str = (max: number) => fc.array(chars, { maxLength: max }).map((xs) => xs.join(''));
    fc.assert(
      fc.property(
        fc.uniqueArray(str(3), { minLength: 20, maxLength: 200 }),
        fc.array(str(60), { minLength: 1, maxLength: 4 }),
        (literals, strings) => {
          const sub = new SubstringMatcher(literals);
          const pre = new AffixMatcher(literals, 'prefix');
          const suf = new AffixMatcher(literals, 'suffix');
          for (const s of strings) {
            expect(sorted(collect(sub, s))).toEqual(expected(literals, s, (x, l) => x.includes(l)));
            expect(sorted(collect(pre, s))).toEqual(expected(literals, s, (x, l) => x.startsWith(l)));
            expect(sorted(collect(suf, s))).toEqual(expected(literals, s, (x, l) => x.endsWith(l)));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('AffixMatcher', () => {
  it.each<[string, 'prefix' | 'suffix', string[], string, string[]]>([
    ['prefixes, nested', 'prefix', ['', 'F', 'Fail', 'Failed', 'Faile!'], 'Failed to register', ['', 'F', 'Fail', 'Failed']],
    ['prefix longer than the string', 'prefix', ['abc'], 'ab', []],
    ['whole string', 'prefix', ['ab'], 'ab', ['ab']],
    ['suffixes', 'suffix', ['', 's', 'days', 'ays', 'day'], '14 days', ['', 's', 'ays', 'days']],
    ['suffix of code units (combining accent)', 'suffix', ['\u0301', 'é'], 'cafe\u0301', ['\u0301']],
    ['empty string', 'suffix', ['', 'a'], '', ['']],
  ])('%s', (_n, end, literals, s, want) => {
    const got = collect(new AffixMatcher(literals, end), s).map((i) => literals[i]);
    expect(got.sort()).toEqual([...want].sort());
  });

  it('equals startsWith() / endsWith() for random literal sets and strings', () => {
    const chars = fc.constantFrom('a', 'b', 'é', '\u0301', '😀');
    const str = (max: number) => fc.array(chars, { maxLength: max }).map((xs) => xs.join(''));
    fc.assert(
      fc.property(fc.uniqueArray(str(6), { maxLength: 30 }), fc.array(str(12), { minLength: 1, maxLength: 5 }), (literals, strings) => {
        const pre = new AffixMatcher(literals, 'prefix');
        const suf = new AffixMatcher(literals, 'suffix');
        for (const s of strings) {
          expect(sorted(collect(pre, s))).toEqual(expected(literals, s, (x, l) => x.startsWith(l)));
          expect(sorted(collect(suf, s))).toEqual(expected(literals, s, (x, l) => x.endsWith(l)));
        }
      }),
      { numRuns: 500 },
    );
  });
});
