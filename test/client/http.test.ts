/** ServiceHttp (URL, key header, timeout, transport errors). */
import { describe, expect, it } from 'vitest';
import { ServiceUnreachableError } from '../../src/client/errors.js';
import { ServiceHttp } from '../../src/client/http.js';

interface Seen {
  url: string;
  method: string | undefined;
  headers: Headers;
  body: unknown;
}

function fakeFetch(respond: (seen: Seen) => Response | Promise<Response>): { fetch: typeof fetch; seen: Seen[] } {
  const seen: Seen[] = [];
  const f = (async (input: string | URL | Request, init: RequestInit = {}) => {
    const s = { url: String(input), method: init.method, headers: new Headers(init.headers), body: init.body };
    seen.push(s);
    return respond(s);
  }) as typeof fetch;
  return { fetch: f, seen };
}

describe('ServiceHttp', () => {
  it.each([
    ['http://svc:8080', '/v1/events', 'http://svc:8080/v1/events'],
    ['http://svc:8080/', '/graphql', 'http://svc:8080/graphql'],
    ['http://svc:8080/notify', '/graphql', 'http://svc:8080/notify/graphql'],
  ])('url(%s, %s)', (base, path, want) => {
    expect(new ServiceHttp({ url: base, apiKey: 'k' }).url(path)).toBe(want);
  });

  it('sends the current key, JSON headers and the body; returns status and text', async () => {
    let key = 'k1';
    const f = fakeFetch(() => new Response('{"ok":true}', { status: 202 }));
    const http = new ServiceHttp({ url: 'http://svc', apiKey: () => key, fetch: f.fetch });
    await expect(http.request('/v1/events', { body: '[]' })).resolves.toMatchObject({ status: 202, text: '{"ok":true}' });
    key = 'k2';
    await http.request('/x', { method: 'PUT', body: '{}' });
    await http.request('/y');
    expect(f.seen.map((s) => [s.method, s.url, s.headers.get('svc-api-key'), s.headers.get('content-type'), s.body])).toEqual([
      ['POST', 'http://svc/v1/events', 'k1', 'application/json', '[]'],
      ['PUT', 'http://svc/x', 'k2', 'application/json', '{}'],
      ['GET', 'http://svc/y', 'k2', null, undefined],
    ]);
  });

  it('a transport failure is a ServiceUnreachableError; a timeout says so', async () => {
    const refused = new ServiceHttp({
      url: 'http://svc',
      apiKey: 'k',
      fetch: fakeFetch(() => Promise.reject(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }))).fetch,
    });
    await expect(refused.request('/x')).rejects.toMatchObject({ name: 'ServiceUnreachableError', timedOut: false, detail: 'ECONNREFUSED' });
    const slow = new ServiceHttp({
      url: 'http://svc',
      apiKey: 'k',
      timeoutMs: 20,
      fetch: ((_i: unknown, init: RequestInit) =>
        new Promise((_r, reject) => init.signal?.addEventListener('abort', () => reject(init.signal?.reason as Error)))) as typeof fetch,
    });
    const e = await slow.request('/x').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ServiceUnreachableError);
    expect((e as ServiceUnreachableError).timedOut).toBe(true);
  });
});
