/** Table tests of the strict formats: hostile values and their neighbours. */
import { describe, expect, it } from 'vitest';
import { codePointLength, durationProblem, isUuid, textProblem, timestampProblem, uuidProblem } from '../../src/validation/formats.js';

describe('uuidProblem: canonical 8-4-4-4-12 hex, not nil or max', () => {
  it.each([
    '123e4567-e89b-12d3-a456-426614174000',
    '3F6C2A9E-8B1D-4C7A-9E52-1D0B7F4A6C31', // hex is case-insensitive (RFC 9562)
    '00000000-0000-4000-8000-000000000000', // not nil: version and variant bits are set
  ])('accepts %s', (v) => {
    expect(uuidProblem(v)).toBeUndefined();
    expect(isUuid(v)).toBe(true);
  });

  it.each<[string, RegExp]>([
    ['urn:uuid:123e4567-e89b-12d3-a456-426614174000', /canonical/],
    ['{123e4567-e89b-12d3-a456-426614174000}', /canonical/],
    ['123e4567e89b12d3a456426614174000', /canonical/],
    ['123e4567-e89b-12d3-a456-42661417400', /canonical/],
    ['123e4567-e89b-12d3-a456-4266141740000', /canonical/],
    ['123e4567-e89b-12d3-a456-42661417400g', /canonical/],
    [' 123e4567-e89b-12d3-a456-426614174000', /canonical/],
    ['123e4567-e89b-12d3-a456-426614174000\n', /canonical/],
    ['１２３e4567-e89b-12d3-a456-426614174000', /canonical/], // full-width digits are not hex
    ['00000000-0000-0000-0000-000000000000', /nil UUID/],
    ['FFFFFFFF-ffff-ffff-ffff-ffffffffffff', /max UUID/],
    ['', /canonical/],
  ])('rejects %j', (v, msg) => {
    expect(uuidProblem(v)).toMatch(msg);
    expect(isUuid(v)).toBe(false);
  });

  it('isUuid refuses non-strings', () => {
    for (const v of [null, undefined, 1, {}, ['123e4567-e89b-12d3-a456-426614174000']]) expect(isUuid(v)).toBe(false);
  });
});

describe('timestampProblem', () => {
  it.each<[string, 'utc' | 'offset']>([
    ['2025-03-14T09:26:53Z', 'utc'],
    ['2025-03-14T09:26:53.5Z', 'utc'],
    ['2025-03-14T09:26:53.123456789Z', 'utc'],
    ['2024-02-29T00:00:00Z', 'utc'], // leap year
    ['2000-02-29T23:59:59Z', 'utc'], // divisible by 400
    ['0001-01-01T00:00:00Z', 'utc'],
    ['9999-12-31T23:59:59Z', 'utc'],
    ['2025-03-18T08:00:00.123+01:00', 'offset'],
    ['2025-03-18T08:00:00.123456-05:00', 'offset'],
    ['2026-11-12T06:00:00.000+00:00', 'offset'], // what src/expiry/message.ts writes
    ['2025-03-18T08:00:00Z', 'offset'], // Z is UTC's offset
    ['2025-03-18T08:00:00+14:00', 'offset'],
  ])('accepts %s (%s)', (v, zone) => {
    expect(timestampProblem(v, zone)).toBeUndefined();
  });

  it.each<[string, 'utc' | 'offset', RegExp]>([
    ['2025-03-14 09:26:53Z', 'utc', /upper-case T/],
    ['2025-03-14t09:26:53Z', 'utc', /upper-case T/],
    ['2025-03-14T09:26:53', 'utc', /UTC, ending in an upper-case Z/],
    ['2025-03-14T09:26:53z', 'utc', /upper-case Z/],
    ['2025-03-14T09:26:53+00:00', 'utc', /upper-case Z/], // statusTransition: "in UTC with Z"
    ['2025-03-14T09:26:53', 'offset', /Z or a numeric offset/],
    ['2025-03-14T09:26:53+0100', 'offset', /Z or a numeric offset/],
    ['2025-03-14T09:26:53+01', 'offset', /Z or a numeric offset/],
    ['2025-03-14T09:26:53+24:00', 'offset', /offset \+24:00 is out of range/],
    ['2025-03-14T09:26:53+01:60', 'offset', /out of range/],
    ['2025-03-14T09:26:53-00:00', 'offset', /unknown offset/],
    ['0000-01-01T00:00:00Z', 'utc', /year 0000/],
    ['+002025-03-14T09:26:53Z', 'utc', /RFC 3339/],
    ['20250-03-14T09:26:53Z', 'utc', /RFC 3339/],
    ['2025-3-14T09:26:53Z', 'utc', /RFC 3339/],
    ['2025-02-30T00:00:00Z', 'utc', /2025-02-30 is not a calendar date/],
    ['2025-02-29T00:00:00Z', 'utc', /not a calendar date/], // not a leap year
    ['1900-02-29T00:00:00Z', 'utc', /not a calendar date/], // divisible by 100, not 400
    ['2025-04-31T00:00:00Z', 'utc', /not a calendar date/],
    ['2025-00-10T00:00:00Z', 'utc', /month 00/],
    ['2025-13-10T00:00:00Z', 'utc', /month 13/],
    ['2025-01-00T00:00:00Z', 'utc', /not a calendar date/],
    ['2025-01-10T24:00:00Z', 'utc', /hour 24/],
    ['2025-01-10T23:60:00Z', 'utc', /minute 60/],
    ['2016-12-31T23:59:60Z', 'utc', /leap seconds/],
    ['2025-01-10T12:34:60Z', 'utc', /leap seconds/],
    ['2025-01-10T12:34:99Z', 'utc', /second 99/],
    ['2025-01-10T12:34:56.Z', 'utc', /fractional seconds/],
    ['2025-01-10T12:34:56.1234567890Z', 'utc', /1 to 9 digits/],
    ['2025-01-10T12:34Z', 'utc', /RFC 3339/],
    ['2025-01-10', 'offset', /RFC 3339/],
    ['yesterday', 'utc', /RFC 3339/],
    ['2025-01-10T12:34:56Z ', 'utc', /upper-case Z/],
    ['2025-01-10T12:34:56Z\u0000', 'utc', /upper-case Z/],
    ['', 'utc', /RFC 3339/],
  ])('rejects %j (%s)', (v, zone, msg) => {
    expect(timestampProblem(v, zone)).toMatch(msg);
  });
});

describe('durationProblem: <h>h<m>m<s>s', () => {
  it.each(['0h0m0s', '0h0m12.25s', '1h2m3.5s', '26h0m0s', '120h0m0s', '999999h59m59.999999999s', '0h5m0s', '1h0m0.100s'])(
    'accepts %s',
    (v) => expect(durationProblem(v)).toBeUndefined(),
  );

  it.each<[string, RegExp]>([
    ['90m', /<h>h<m>m<s>s/], // the spec's form always has all three parts
    ['5m0s', /<h>h<m>m<s>s/], // Go's Duration.String drops a zero hour; the spec's form does not
    ['1h30m', /<h>h<m>m<s>s/],
    ['90s', /<h>h<m>m<s>s/],
    ['1h', /<h>h<m>m<s>s/],
    ['1h60m60s', /minutes must be 0-59/],
    ['1h0m60s', /seconds must be 0-59/],
    ['0h0m75.5s', /seconds must be 0-59/],
    ['1h05m0s', /leading zeros/],
    ['01h5m0s', /leading zeros/],
    ['0h0m00s', /leading zeros/],
    ['1000000h0m0s', /at most 6 digits/],
    ['123456789012345678901h0m0s', /at most 6 digits/], // 21 digits
    ['0h0m1.1234567890s', /1 to 9 digits/],
    ['1h2m3.s', /<h>h<m>m<s>s/],
    ['-1h0m0s', /<h>h<m>m<s>s/],
    ['+1h0m0s', /<h>h<m>m<s>s/],
    ['1H2M3S', /<h>h<m>m<s>s/],
    ['PT1H2M3S', /<h>h<m>m<s>s/],
    ['1h 2m 3s', /<h>h<m>m<s>s/],
    ['１h2m3s', /<h>h<m>m<s>s/], // \d is ASCII-only
    ['1h2m3s\n', /<h>h<m>m<s>s/],
    ['', /<h>h<m>m<s>s/],
  ])('rejects %j', (v, msg) => {
    expect(durationProblem(v)).toMatch(msg);
  });
});

describe('textProblem', () => {
  it.each<[string, 'name' | 'text' | 'secret']>([
    ['prod-eu-west-1', 'name'],
    ['Zürich Ops ✓', 'name'],
    ['日本語の名前', 'name'],
    ['עברית ערבית عربي', 'name'], // right-to-left scripts are fine; only invisible reordering controls are not
    ['😀 rocket 🚀', 'name'], // astral characters are single code points
    ['line 1\nline 2\ttab\r\n', 'text'],
    ['mark\u200Fok', 'text'], // RLM is allowed in free text (it does not override)
    ['https://hooks.example.com/a?b=c', 'secret'],
  ])('accepts %j as %s', (v, kind) => {
    expect(textProblem(v, kind)).toBeUndefined();
  });

  it.each<[string, 'name' | 'text' | 'secret', RegExp]>([
    ['a\u0000b', 'name', /U\+0000 NUL at character 2/],
    ['\u0000', 'text', /U\+0000 NUL/],
    ['a\u0007', 'name', /U\+0007 \(a control character\)/],
    ['a\nb', 'name', /U\+000A LINE FEED/],
    ['a\tb', 'name', /U\+0009 TAB/],
    ['a\u007fb', 'text', /U\+007F DELETE/],
    ['a\u0085b', 'name', /U\+0085 \(a control character\)/], // C1 NEL
    ['a\u009bb', 'text', /U\+009B/], // C1 CSI
    ['a\u001bb', 'text', /U\+001B/], // ESC: terminal escape sequences in logs
    ['admin\u202Egnp.exe', 'name', /U\+202E RIGHT-TO-LEFT OVERRIDE at character 6/],
    ['x\u202Ay', 'name', /U\+202A LEFT-TO-RIGHT EMBEDDING/],
    ['x\u202Dy', 'text', /U\+202D LEFT-TO-RIGHT OVERRIDE/],
    ['x\u2066y', 'name', /U\+2066 LEFT-TO-RIGHT ISOLATE/],
    ['x\u2069y', 'text', /U\+2069 POP DIRECTIONAL ISOLATE/],
    ['pay\u200Bments', 'name', /U\+200B ZERO WIDTH SPACE at character 4/],
    ['a\u200Cb', 'name', /U\+200C ZERO WIDTH NON-JOINER/],
    ['a\u200Db', 'name', /U\+200D ZERO WIDTH JOINER/],
    ['a\u2060b', 'name', /U\+2060 WORD JOINER/],
    ['\uFEFFname', 'name', /U\+FEFF ZERO WIDTH NO-BREAK SPACE \(BOM\) at character 1/],
    ['a\u200Eb', 'name', /U\+200E LEFT-TO-RIGHT MARK/],
    ['soft\u00ADhyphen', 'name', /U\+00AD SOFT HYPHEN/],
    ['a\u2028b', 'name', /U\+2028 LINE SEPARATOR/],
    ['a\u2029b', 'name', /U\+2029 PARAGRAPH SEPARATOR/],
    ['a\u{E0041}b', 'name', /U\+E0041/], // tag character
    ['a\uFFFEb', 'name', /U\+FFFE/], // noncharacter
    ['a\uFFFFb', 'text', /U\+FFFF/],
    ['a\uD800b', 'name', /U\+D800 \(a lone surrogate/],
    ['a\uDC00', 'text', /U\+DC00 \(a lone surrogate/],
    ['\uDE00\uD83D', 'name', /U\+DE00/], // reversed pair: both lone
    ['😀\u0000', 'name', /at character 2/], // positions count code points, not UTF-16 units
    ['key\u0000', 'secret', /^contains a control character or invalid Unicode \(U\+0000\)$/],
    ['key\uD800', 'secret', /U\+D800/],
  ])('rejects %j as %s', (v, kind, msg) => {
    expect(textProblem(v, kind)).toMatch(msg);
  });

  it('a secret is never echoed, nor where the bad character is', () => {
    const msg = textProblem('sk-live-123\u0001456', 'secret')!;
    expect(msg).not.toContain('sk-live');
    expect(msg).not.toMatch(/character \d/);
  });

  it('counts length in code points, not UTF-16 units', () => {
    expect(codePointLength('😀'.repeat(255))).toBe(255);
    expect('😀'.repeat(255).length).toBe(510);
    expect(textProblem('😀'.repeat(255), 'name', 255)).toBeUndefined();
    expect(textProblem('😀'.repeat(256), 'name', 255)).toBe('must be at most 255 characters, got 256');
    expect(textProblem('é'.repeat(256), 'name', 255)).toBe('must be at most 255 characters, got 256');
    expect(textProblem('e\u0301'.repeat(100), 'name', 255)).toBeUndefined(); // combining marks are allowed
  });
});

describe('properties (fast-check)', () => {
  // Imported lazily so the table tests above do not depend on it.
  const fcP = import('fast-check');
  const FORBIDDEN_IN_NAMES = [
    0x00, 0x07, 0x0a, 0x1b, 0x7f, 0x85, 0x9f, 0xad, 0x200b, 0x200d, 0x200e, 0x202e, 0x2066, 0x2069, 0x2060, 0xfeff, 0x2028, 0xd800, 0xdfff,
    0xfffe,
  ];

  it('every timestamp the emitters write (any instant in years 1-9999) is accepted; Z form and offset form', async () => {
    const { default: fc } = await fcP;
    const { isoUtc } = await import('../../src/events/wire-formats.js');
    const { notificationDate } = await import('../../src/expiry/message.js');
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(1, 0, 1) + 86_400_000, max: Date.UTC(9999, 11, 31) }), (ms) => {
        expect(timestampProblem(isoUtc(ms), 'utc')).toBeUndefined();
        expect(timestampProblem(notificationDate(ms), 'offset')).toBeUndefined();
      }),
    );
  });

  it('every duration the emitter writes is accepted', async () => {
    const { default: fc } = await fcP;
    const { unhealthyDurationOf } = await import('../../src/events/wire-formats.js');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 999_999 * 3_600_000 }), (ms) => {
        expect(durationProblem(unhealthyDurationOf(ms))).toBeUndefined();
      }),
    );
  });

  it('a name with any forbidden character anywhere is refused, at the right position', async () => {
    const { default: fc } = await fcP;
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme-ascii' }),
        fc.constantFrom(...FORBIDDEN_IN_NAMES),
        fc.string({ unit: 'grapheme' }),
        (before, cp, after) => {
          const s = before + String.fromCharCode(cp) + after;
          const msg = textProblem(s, 'name');
          expect(msg).toBeDefined();
          if (!/[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Noncharacter_Code_Point}]/u.test(before))
            expect(msg).toContain(`at character ${codePointLength(before) + 1}`);
        },
      ),
    );
  });

  it('code-point length agrees with spreading the string, for any UTF-16 input', async () => {
    const { default: fc } = await fcP;
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary' }),
        fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)) }),
        (a, b) => {
          const s = a + b + a;
          expect(codePointLength(s)).toBe([...s].length);
        },
      ),
    );
  });
});
