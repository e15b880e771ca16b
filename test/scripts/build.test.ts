/** scripts/build.mjs: the bundle's non-ASCII text escaped only where the escape means the same character. */
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script without type declarations
import { escapeNonAscii } from '../../scripts/build.mjs';

describe('escapeNonAscii', () => {
  it('escapes BMP characters in regular expressions and comments, leaves ASCII alone', () => {
    const src = 'const r = /[àáâ]/g; // café\nconst a = 1;';
    const out = escapeNonAscii(src);
    expect(out).toBe('const r = /[\\u00e0\\u00e1\\u00e2]/g; // caf\\u00e9\nconst a = 1;');
    expect(/[^\x20-\x7e\n]/.test(out)).toBe(false);
    // the escaped class matches what the original did
    const [cls] = /\[.*\]/.exec(out)!;
    expect(new RegExp(cls).test('á')).toBe(true);
    expect(escapeNonAscii('plain ascii')).toBe('plain ascii');
  });

  // each would change meaning: `/\é/` is é, `/\\u00e9/` is a backslash and "u00e9"; an escaped surrogate pair is a
  // syntax error in an identifier and two units in a character class
  it.each([
    ['a character after a backslash', 'const r = /\\é/;'],
    ['a character outside the BMP', 'const 𝑥 = 1;'],
  ])('refuses %s (the build fails instead of changing meaning)', (_what, src) => {
    expect(() => escapeNonAscii(src)).toThrow(/cannot escape the non-ASCII text at offset \d+ of the bundle/);
  });
});
