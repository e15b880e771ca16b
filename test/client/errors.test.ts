/** The client's error mapping: transport failures, error bodies, statuses, GraphQL errors — never request data. */
import { ClientError } from 'graphql-request';
import { describe, expect, it } from 'vitest';
import { ServiceUnreachableError, errorEntries, kindOfStatus, toServiceError, type ServiceErrorKind } from '../../src/client/errors.js';

describe('toServiceError', () => {
  it('toServiceError never keeps request variables (secrets) in the message', () => {
    const ce = new ClientError(
      {
        status: 200,
        headers: new Headers(),
        errors: [{ message: 'input.url must be an absolute http(s) URL', extensions: { code: 'BAD_USER_INPUT', field: 'input.url' } }],
      } as never,
      { query: 'mutation', variables: { input: { url: 'https://secret-token@example' } } },
    );
    expect(ce.message).toContain('secret-token'); // graphql-request's own message does
    const e = toServiceError(ce, 'create integration');
    expect(e).toMatchObject({ kind: 'bad-input', details: { field: 'input.url', code: 'BAD_USER_INPUT' } });
    expect(e.message).toBe('create integration: input.url must be an absolute http(s) URL (BAD_USER_INPUT)');
    expect(JSON.stringify(e)).not.toContain('secret-token');
    const net = toServiceError(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }), 'list routers');
    expect(net).toMatchObject({ kind: 'unavailable', message: 'list routers: service unreachable: fetch failed (ECONNREFUSED)' });
  });

  it('a ServiceUnreachableError (from ServiceHttp) reads as the raw fetch error did', () => {
    const raw = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    expect(toServiceError(new ServiceUnreachableError(raw), 'list routers').message).toBe(toServiceError(raw, 'list routers').message);
    const timeout = new ServiceUnreachableError(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    expect(toServiceError(timeout, 'get monitoring config').message).toBe('get monitoring config: service unreachable: timed out');
  });
});

describe('ServiceUnreachableError', () => {
  it.each<[string, unknown, { timedOut: boolean; code: string | undefined; detail: string }]>([
    [
      'refused',
      Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }),
      { timedOut: false, code: 'ECONNREFUSED', detail: 'ECONNREFUSED' },
    ],
    [
      'cause without code',
      Object.assign(new TypeError('fetch failed'), { cause: { message: 'other side closed' } }),
      { timedOut: false, code: undefined, detail: 'other side closed' },
    ],
    ['timeout', new DOMException('timed out', 'TimeoutError'), { timedOut: true, code: undefined, detail: 'timed out' }],
    ['not an Error', 'boom', { timedOut: false, code: undefined, detail: 'boom' }],
  ])('%s', (_n, e, want) => {
    expect(new ServiceUnreachableError(e)).toMatchObject(want);
  });
  it('of() keeps an existing one', () => {
    const u = new ServiceUnreachableError(new Error('x'));
    expect(ServiceUnreachableError.of(u)).toBe(u);
  });
});

describe('error bodies and statuses', () => {
  it.each<[string, string, unknown[]]>([
    [
      'entries',
      '{"errors":[{"code":"BAD_USER_INPUT","field":"[0].data.x","message":"bad"}]}',
      [{ code: 'BAD_USER_INPUT', field: '[0].data.x', message: 'bad' }],
    ],
    ['no errors field', '{"ok":true}', []],
    ['errors not an array', '{"errors":"x"}', []],
    ['not JSON', '<html>', []],
    ['empty', '', []],
    ['null', 'null', []],
  ])('errorEntries: %s', (_n, text, want) => {
    expect(errorEntries(text)).toEqual(want);
  });
  it.each<[number, ServiceErrorKind]>([
    [500, 'unavailable'],
    [503, 'unavailable'],
    [401, 'unauthenticated'],
    [404, 'not-found'],
    [400, 'bad-input'],
    [403, 'other'],
    [409, 'other'],
  ])('kindOfStatus(%i) = %s', (status, kind) => {
    expect(kindOfStatus(status)).toBe(kind);
  });
});
