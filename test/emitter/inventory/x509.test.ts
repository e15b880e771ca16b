/**
 * What the inventory reads of a TLS Secret besides the chain (facts.test.ts): application ids from annotations,
 * and the X.509 text helpers. Moved from the emitter's former local expiry evaluation, whose parsing they were.
 */
import { describe, expect, it } from 'vitest';
import { applicationIdsOf, parseApplicationIds } from '../../../src/emitter/inventory/facts.js';
import { commonNameOf, dnLines, dnsNamesOf } from '../../../src/emitter/inventory/x509.js';

describe('application ids', () => {
  it('parses the annotation; the Secret wins over its Certificate; none is unassigned', () => {
    expect(parseApplicationIds(' app-1, app-2,,app-1 ')).toEqual(['app-1', 'app-2']);
    expect(parseApplicationIds('app-1\napp-2 app-3')).toEqual(['app-1', 'app-2', 'app-3']);
    expect(parseApplicationIds(undefined)).toEqual([]);
    const certObj = { metadata: { annotations: { 'notify.certmgr.io/application-ids': 'from-cert' } } };
    expect(applicationIdsOf({ 'notify.certmgr.io/application-ids': 'from-secret' }, certObj)).toEqual(['from-secret']);
    // an empty annotation on the Secret still wins: the Secret says "unassigned"
    expect(applicationIdsOf({ 'notify.certmgr.io/application-ids': '' }, certObj)).toEqual([]);
    expect(applicationIdsOf({}, certObj)).toEqual(['from-cert']);
    expect(
      applicationIdsOf(undefined, { spec: { secretTemplate: { annotations: { 'notify.certmgr.io/application-ids': 'tmpl' } } } }),
    ).toEqual(['tmpl']);
    expect(applicationIdsOf({ other: 'x' })).toEqual([]);
  });
});

describe('X.509 text helpers', () => {
  it('DNS names of a subjectAltName (quoted values unquoted, IPs skipped); DN on one line; CN', () => {
    expect(dnsNamesOf('DNS:a.example.com, IP Address:10.0.0.1, DNS:"b,c.example.com"')).toEqual(['a.example.com', 'b,c.example.com']);
    expect(dnsNamesOf(undefined)).toEqual([]);
    expect(dnLines('O=Example Corp\nCN=leaf.example.com\n').join(', ')).toBe('O=Example Corp, CN=leaf.example.com');
    expect(commonNameOf('O=Example Corp\nCN=leaf.example.com')).toBe('leaf.example.com');
    expect(commonNameOf('O=Example Corp')).toBeUndefined();
  });
});
