import { afterEach, describe, expect, it } from 'vitest';
import {
  classifyStatus,
  describeNetworkError,
  parseRetryAfter,
  postAndClassify,
  redact,
  secretFragments,
  truncateChars,
  truncateUtf8,
  RESPONSE_BODY_LIMIT,
  type HttpContext,
} from '../../src/integrations/http.js';
import { startReceiver, type Receiver } from './helpers.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');

describe('classifyStatus', () => {
  it.each([
    [200, 'delivered'],
    [202, 'delivered'],
    [204, 'delivered'],
    [301, 'dead'],
    [400, 'dead'],
    [401, 'dead'],
    [404, 'dead'],
    [408, 'retry'],
    [410, 'dead'],
    [413, 'dead'],
    [429, 'retry'],
    [500, 'retry'],
    [502, 'retry'],
    [503, 'retry'],
    [504, 'retry'],
  ] as const)('%i -> %s', (status, outcome) => {
    expect(classifyStatus(status)).toBe(outcome);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('120', NOW)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
  });
  it('reads an HTTP date relative to the clock', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:01:30 GMT', NOW)).toBe(90_000);
  });
  it('clamps a date in the past to 0', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', NOW)).toBe(0);
  });
  it.each([[null], [undefined], [''], ['-5'], ['1.5'], ['soon'], ['12abc']])('ignores %j', (v) => {
    expect(parseRetryAfter(v, NOW)).toBeUndefined();
  });
});

describe('text helpers', () => {
  it('truncateUtf8 never splits a multi-byte character', () => {
    const s = 'a' + '€'.repeat(600); // 1 + 1800 bytes
    const t = truncateUtf8(s, 1024);
    expect(Buffer.byteLength(t)).toBeLessThanOrEqual(1024);
    expect(t).not.toContain('\uFFFD');
    expect(t.length).toBe(1 + 341); // 1 + 341*3 = 1024 bytes
    expect(truncateUtf8('short', 1024)).toBe('short');
  });
  it('truncateChars counts code points and marks the cut', () => {
    expect(truncateChars('🔑'.repeat(10), 5)).toBe('🔑🔑🔑🔑…');
    expect(truncateChars('abc', 5)).toBe('abc');
  });
  it('secretFragments covers a URL, its path, query and password', () => {
    const f = secretFragments(['https://user:p%40ss@hooks.example.com/services/T0/B0/XyZ?token=abcd', 'tiny', '']);
    expect(f).toContain('https://user:p%40ss@hooks.example.com/services/T0/B0/XyZ?token=abcd');
    expect(f).toContain('/services/T0/B0/XyZ');
    expect(f).toContain('?token=abcd');
    expect(f).toContain('p@ss');
    const text = redact('POST /services/T0/B0/XyZ?token=abcd failed with p@ss', f);
    expect(text).not.toMatch(/XyZ|abcd|p@ss/);
    expect(text).toContain('[REDACTED]');
    // A malformed percent-escape in the password does not stop the other parts being redacted.
    const g = secretFragments(['smtp://user:p%zz-pass@mail.example.com:587/some/path']);
    expect(g).toContain('p%zz-pass');
    expect(g).toContain('/some/path');
  });
  it('describeNetworkError names codes only', () => {
    const err = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' }),
    });
    expect(describeNetworkError(err)).toBe('network error: connection refused (ECONNREFUSED)');
    expect(describeNetworkError(new Error('boom https://x/y?token=1'))).toBe('network error');
    expect(describeNetworkError({ code: 'ESOCKET', originalCode: 'ECONNRESET' })).toBe('network error: connection reset (ECONNRESET)');
  });
});

describe('postAndClassify against a loopback receiver', () => {
  let rx: Receiver;
  let other: Receiver | undefined;
  const ctx = (over: Partial<HttpContext> = {}): HttpContext => ({ timeoutMs: 2000, userAgent: 'ua-test/1', clock: () => NOW, ...over });
  afterEach(async () => {
    await rx?.close();
    await other?.close();
    other = undefined;
  });

  it('POSTs the body with content type and user agent, and returns the response body', async () => {
    rx = await startReceiver((_r, res) => res.writeHead(202).end('{"status":"success"}'));
    const r = await postAndClassify({ url: `${rx.url}/x`, body: '{"a":1}', headers: { 'x-extra': 'yes' }, secrets: [] }, ctx());
    expect(r).toEqual({ outcome: 'delivered', statusCode: 202, responseBody: '{"status":"success"}' });
    const req = rx.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/x');
    expect(req.body).toBe('{"a":1}');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['user-agent']).toBe('ua-test/1');
    expect(req.headers['x-extra']).toBe('yes');
  });

  it('does not follow redirects and reports them as dead', async () => {
    other = await startReceiver();
    rx = await startReceiver((_r, res) => res.writeHead(307, { location: `${other!.url}/stolen` }).end());
    const r = await postAndClassify({ url: `${rx.url}/hook`, body: '{}', secrets: [] }, ctx());
    expect(r.outcome).toBe('dead');
    expect(r.statusCode).toBe(307);
    expect(r.error).toBe('HTTP 307 redirect not followed');
    expect(other.requests).toHaveLength(0);
  });

  it('truncates a large response body to 1 KiB', async () => {
    rx = await startReceiver((_r, res) => res.writeHead(500).end('x'.repeat(100_000)));
    const r = await postAndClassify({ url: rx.url, body: '{}', secrets: [] }, ctx());
    expect(r.outcome).toBe('retry');
    expect(r.responseBody).toHaveLength(RESPONSE_BODY_LIMIT);
  });

  it('returns retry when the caller aborts, without waiting for the timeout', async () => {
    rx = await startReceiver(() => {
      /* never answers */
    });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    // the attempt timeout is far beyond the test's own: only the abort can end this call in time
    const r = await postAndClassify({ url: rx.url, body: '{}', secrets: [] }, ctx({ timeoutMs: 3_600_000, signal: ac.signal }));
    expect(r).toEqual({ outcome: 'retry', error: 'aborted' });
  });

  it('does not send at all when the signal is already aborted', async () => {
    rx = await startReceiver();
    const r = await postAndClassify({ url: rx.url, body: '{}', secrets: [] }, ctx({ signal: AbortSignal.abort() }));
    expect(r.outcome).toBe('retry');
    expect(rx.requests).toHaveLength(0);
  });

  it('reads an endless response body only up to the bound, and ends the attempt', async () => {
    rx = await startReceiver((_r, res) => {
      res.writeHead(503); // chunked, never ended
      res.write('é'.repeat(600)); // 1,200 bytes: the bound falls inside a character
    });
    const r = await postAndClassify({ url: rx.url, body: '{}', secrets: [] }, ctx({ timeoutMs: 3_600_000 }));
    expect(r.outcome).toBe('retry');
    expect(r.statusCode).toBe(503);
    expect(r.responseBody).toBe('é'.repeat(512));
  });

  it("joins a caller's header named in another case with ours, and a same-named one replaces ours (as fetch did)", async () => {
    rx = await startReceiver((_r, res) => res.writeHead(204).end());
    await postAndClassify({ url: rx.url, body: '{}', headers: { Accept: 'a/b', 'X-Twice': '1', 'x-twice': '2' }, secrets: [] }, ctx());
    await postAndClassify({ url: rx.url, body: '{}', headers: { 'content-type': 'text/plain', 'User-Agent': 'mine' }, secrets: [] }, ctx());
    const [a, b] = rx.requests;
    expect(a!.headers['accept']).toBe('a/b');
    expect(a!.headers['x-twice']).toBe('1, 2');
    expect(b!.headers['content-type']).toBe('text/plain');
    expect(b!.headers['user-agent']).toBe('ua-test/1, mine');
  });

  it('sends headers named like object machinery (constructor, __proto__) as given, not dropped or mixed with inherited values', async () => {
    rx = await startReceiver((_r, res) => res.writeHead(204).end());
    const headers = Object.fromEntries([
      ['__proto__', 'p'],
      ['constructor', 'c'],
      ['toString', 't'],
    ]) as Record<string, string>;
    await postAndClassify({ url: rx.url, body: '{}', headers, secrets: [] }, ctx());
    const raw = rx.requests[0]!.rawHeaders;
    const sent = Array.from({ length: raw.length / 2 }, (_, i) => `${raw[2 * i]!}: ${raw[2 * i + 1]!}`);
    expect(sent).toEqual(expect.arrayContaining(['__proto__: p', 'constructor: c', 'tostring: t']));
  });

  it('sends only its own headers: no compressed response is asked for (the body is a diagnostic, read as sent)', async () => {
    rx = await startReceiver((_r, res) => res.writeHead(204).end());
    await postAndClassify({ url: rx.url, body: '{}', secrets: [] }, ctx());
    const names = Object.keys(rx.requests[0]!.headers).sort();
    expect(names).toEqual(['connection', 'content-length', 'content-type', 'host', 'user-agent']);
  });

  it('does not send to a URL with credentials or another scheme', async () => {
    rx = await startReceiver();
    for (const url of [rx.url.replace('http://', 'http://user:pw@'), rx.url.replace('http:', 'ftp:')]) {
      const r = await postAndClassify({ url, body: '{}', secrets: [url] }, ctx());
      expect(r).toEqual({ outcome: 'retry', error: 'network error' });
    }
    expect(rx.requests).toHaveLength(0);
  });

  it('redacts secrets a receiver echoes in the status text and body', async () => {
    rx = await startReceiver((r, res) => {
      res.statusMessage = `Nope ${r.path}`;
      res.writeHead(403).end(`denied ${r.path} key=${JSON.parse(r.body).key}`);
    });
    const url = `${rx.url}/T0/B0/SeCrEtToKeN`;
    const r = await postAndClassify({ url, body: JSON.stringify({ key: 'KEY-0123456789' }), secrets: [url, 'KEY-0123456789'] }, ctx());
    expect(r.outcome).toBe('dead');
    const text = JSON.stringify(r);
    expect(text).not.toContain('SeCrEtToKeN');
    expect(text).not.toContain('KEY-0123456789');
    expect(r.responseBody).toBe('denied [REDACTED] key=[REDACTED]');
  });
});
