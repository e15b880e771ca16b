import { describe, expect, it } from 'vitest';
import { csvCell } from '../../src/http/rest/inventory.js';

describe('csvCell', () => {
  it.each<[string | number | null, string]>([
    ['plain', 'plain'],
    [null, ''],
    [-3, '-3'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['line\nbreak', '"line\nbreak"'],
    ['=1+1', "'=1+1"],
    ['+1', "'+1"],
    ['-1', "'-1"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\tx', "'\tx"],
    ['\rx', `"'\rx"`],
    ['=HYPERLINK("u","x")', `"'=HYPERLINK(""u"",""x"")"`],
    ['a=b', 'a=b'],
    // a spreadsheet skips leading blanks and control characters, and reads full-width signs as formulas
    [' =1+1', "' =1+1"],
    ['   +1', "'   +1"],
    ['\u00a0-1', "'\u00a0-1"],
    ['\u3000@SUM(A1)', "'\u3000@SUM(A1)"],
    ['\u200b=1', "'\u200b=1"],
    ['\ufeff=1', "'\ufeff=1"],
    ['\u0000=1', "'\u0000=1"],
    ['\n=1', `"'\n=1"`],
    ['\uff1d1+1', "'\uff1d1+1"],
    ['\uff0b1', "'\uff0b1"],
    ['\uff0d1', "'\uff0d1"],
    ['\uff20SUM(A1)', "'\uff20SUM(A1)"],
    [' \uff1d1+1', "' \uff1d1+1"],
    ['\ufe661', "'\ufe661"],
    ['\t', "'\t"],
    ['\r', `"'\r"`],
    [' plain', ' plain'],
    ['x =1', 'x =1'],
    ['a\uff1db', 'a\uff1db'],
  ])('%j → %j', (v, out) => {
    expect(csvCell(v)).toBe(out);
  });
});
