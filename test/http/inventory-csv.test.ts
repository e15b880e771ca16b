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
  ])('%j → %j', (v, out) => {
    expect(csvCell(v)).toBe(out);
  });
});
