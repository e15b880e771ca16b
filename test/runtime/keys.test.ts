import { describe, expect, it } from 'vitest';
import { keyOf, kindKey, objectKey, parseKey, parseKindKey } from '../../src/runtime/keys.js';
import { healthKey, parseHealthKey } from '../../src/emitter/health/controller.js';

describe('objectKey / parseKey', () => {
  it.each([
    ['ns', 'n', 'ns/n', { namespace: 'ns', name: 'n' }],
    [undefined, 'cluster-wide', 'cluster-wide', { name: 'cluster-wide' }],
    ['', 'cluster-wide', 'cluster-wide', { name: 'cluster-wide' }],
  ])('(%j, %j) → %j → %j', (ns, name, key, parsed) => {
    expect(objectKey(ns, name)).toBe(key);
    expect(parseKey(key)).toEqual(parsed);
  });
  it('keyOf reads metadata', () => {
    expect(keyOf({ metadata: { namespace: 'a', name: 'b' } })).toBe('a/b');
    expect(keyOf({ metadata: { name: 'b' } })).toBe('b');
  });
});

describe('kindKey / parseKindKey', () => {
  it.each([
    ['Issuer', 'ns', 'n', 'Issuer/ns/n'],
    ['ClusterIssuer', undefined, 'n', 'ClusterIssuer//n'],
    ['ClusterIssuer', '', 'n', 'ClusterIssuer//n'],
  ])('(%j, %j, %j) → %j and back', (kind, ns, name, key) => {
    expect(kindKey(kind, ns, name)).toBe(key);
    expect(parseKindKey(key)).toEqual({ kind, namespace: ns ?? '', name });
  });
  it.each(['', 'Issuer', 'Issuer/ns', 'Issuer/ns/', '/ns/n'])('%j is not a kind key', (key) => {
    expect(parseKindKey(key)).toBeUndefined();
  });
});

describe('health keys (persisted in the state ConfigMaps: the format must not change)', () => {
  it.each([
    [['Issuer', 'team-a', 'x'], 'Issuer/team-a/x'],
    [['Certificate', 'team-a', 'x'], 'Certificate/team-a/x'],
    [['ClusterIssuer', 'ignored', 'x'], 'ClusterIssuer//x'],
    // a TLS Secret no Certificate manages, whose endpoints serve another certificate (health/serving.ts)
    [['Secret', 'shop', 'legacy-tls'], 'Secret/shop/legacy-tls'],
  ] as const)('%j → %s', ([kind, ns, name], key) => {
    expect(healthKey(kind, ns, name)).toBe(key);
    expect(parseHealthKey(key)).toEqual({ kind, namespace: kind === 'ClusterIssuer' ? '' : ns, name });
  });
  it.each(['ConfigMap/a/b', 'Issuer/a', 'Issuer'])('%j is not a health key', (key) => expect(parseHealthKey(key)).toBeUndefined());
});
