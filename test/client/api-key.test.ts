/** API-key sources: the pure Secret decoding (table) and the periodic re-read that keeps the last good key. */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { SecretApiKey, apiKeyGetter, apiKeyOf, type SecretKeySelector } from '../../src/client/api-key.js';
import { FakeClock } from '../runtime/fake-clock.js';

const SEL: SecretKeySelector = { namespace: 'ns', name: 'svc-key', key: 'api-key' };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const log = pino({ level: 'silent' });

describe('apiKeyOf', () => {
  it.each<[string, { data?: Record<string, string> } | undefined, string | RegExp]>([
    ['the key, trimmed', { data: { 'api-key': b64(' k1\n') } }, 'k1'],
    ['no Secret', undefined, /^API key Secret ns\/svc-key not found$/],
    ['no data', {}, /^API key Secret ns\/svc-key has no key api-key$/],
    ['another key only', { data: { other: b64('x') } }, /has no key api-key/],
    ['empty value', { data: { 'api-key': '' } }, /has no key api-key/],
  ])('%s', (_n, secret, want) => {
    if (typeof want === 'string') expect(apiKeyOf(secret, SEL)).toBe(want);
    else expect(() => apiKeyOf(secret, SEL)).toThrow(want);
  });
});

describe('apiKeyGetter', () => {
  it('a value and a getter both become a getter', () => {
    expect(apiKeyGetter('v')()).toBe('v');
    let k = 'a';
    const g = apiKeyGetter(() => k);
    k = 'b';
    expect(g()).toBe('b');
  });
});

describe('SecretApiKey', () => {
  it('loads, re-reads every refreshMs, keeps the last key while a read fails, stops', async () => {
    const clock = new FakeClock();
    const values: ({ data?: Record<string, string> } | undefined | Error)[] = [
      { data: { 'api-key': b64('k1') } },
      new Error('apiserver down'),
      undefined,
      { data: { 'api-key': b64('k2') } },
    ];
    let reads = 0;
    const key = new SecretApiKey({
      read: async (ns, name) => {
        expect([ns, name]).toEqual(['ns', 'svc-key']);
        const v = values[Math.min(reads++, values.length - 1)];
        if (v instanceof Error) throw v;
        return v;
      },
      secret: SEL,
      log,
      refreshMs: 1000,
      clock,
    });
    expect(key.get()).toBe('');
    await expect(key.load()).resolves.toBe('k1');
    key.start();
    await clock.advance(999);
    expect(reads).toBe(1);
    await clock.advance(1); // read fails: last key kept
    expect([reads, key.get()]).toEqual([2, 'k1']);
    await clock.advance(1000); // Secret gone: last key kept
    expect([reads, key.get()]).toEqual([3, 'k1']);
    await clock.advance(1000); // rotated
    expect([reads, key.get()]).toEqual([4, 'k2']);
    key.stop();
    expect(clock.pending).toBe(0);
    await clock.advance(5000);
    expect(reads).toBe(4);
    key.start(); // after stop: nothing
    expect(clock.pending).toBe(0);
  });

  it('load() rejects naming the Secret when the key is missing', async () => {
    const key = new SecretApiKey({ read: async () => ({ data: {} }), secret: SEL, log });
    await expect(key.load()).rejects.toThrow('API key Secret ns/svc-key has no key api-key');
  });
});
