import { describe, expect, it } from 'vitest';
import { MAX_LOGGED_ERROR_CHARS, boundedErr, capText } from '../../src/http/errors.js';

describe('capText', () => {
  const cases: [string, string, number, string][] = [
    ['short text unchanged', 'abc', 5, 'abc'],
    ['exactly max code points unchanged', 'abcde', 5, 'abcde'],
    ['one over: cut with an ellipsis', 'abcdef', 5, 'abcd…'],
    ['astral characters count once each', '😀😀😀', 3, '😀😀😀'],
    ['astral characters are not split', '😀😀😀😀', 3, '😀😀…'],
    ['mixed, cut after a pair', 'a😀b😀c', 4, 'a😀b…'],
    ['empty', '', 3, ''],
  ];
  it.each(cases)('%s', (_name, input, max, want) => {
    const got = capText(input, max);
    expect(got).toBe(want);
    expect([...got].length).toBeLessThanOrEqual(max);
    expect(/\p{Cs}/u.test(got)).toBe(false); // no lone surrogate
  });

  it('reads only the head of a huge string', () => {
    expect(capText('x'.repeat(10_000_000), 300)).toBe('x'.repeat(299) + '…');
  });
});

describe('boundedErr', () => {
  it('caps the message and stack of a logged error and keeps type, code and cause', () => {
    const cause = Object.assign(new Error('c'.repeat(50_000)), { code: 'E_X' });
    const e = new TypeError('v'.repeat(100_000), { cause });
    const b = boundedErr(e) as { type: string; message: string; stack: string; cause: { code: string; message: string } };
    expect(b.type).toBe('TypeError');
    expect([...b.message].length).toBeLessThanOrEqual(MAX_LOGGED_ERROR_CHARS.message);
    expect([...b.stack].length).toBeLessThanOrEqual(MAX_LOGGED_ERROR_CHARS.stack);
    expect(b.cause.code).toBe('E_X');
    expect([...b.cause.message].length).toBeLessThanOrEqual(MAX_LOGGED_ERROR_CHARS.message);
    expect(JSON.stringify(b).length).toBeLessThan(20_000);
  });

  it('passes non-errors through, capping strings', () => {
    expect(boundedErr(42)).toBe(42);
    expect((boundedErr('s'.repeat(5_000)) as string).length).toBeLessThanOrEqual(MAX_LOGGED_ERROR_CHARS.message);
  });
});
