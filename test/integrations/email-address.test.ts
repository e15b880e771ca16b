/** Which addresses EMAIL integrations may use on the shared relay (pure decisions, tables). */
import { describe, expect, it } from 'vitest';
import {
  emailAddressProblem,
  emailDomainOf,
  parseSenderDomains,
  senderDomainAllowed,
  senderProblem,
} from '../../src/integrations/email-address.js';

describe('emailAddressProblem', () => {
  it.each<[string, RegExp | null]>([
    ['ops@example.com', null],
    ['first.last+tag@mail.example.co.uk', null],
    ["o'neil#x@example.com", null],
    ['ops@EXAMPLE.com', null],
    ['ops@bücher.de', null],
    ['ops@xn--bcher-kva.de', null],
    ['a@[127.0.0.1]', /address literal/],
    ['a@[IPv6:::1]', /address literal/],
    ['a@[::1]', /address literal/],
    ['a@127.0.0.1', /IP address/],
    ['a@0x7f.1', /IP address/],
    ['a@localhost', /DNS domain name/],
    ['a@example', /DNS domain name/],
    ['a@-bad.example.com', /DNS domain name/],
    ['a@exa_mple.com', /DNS domain name/],
    ['a@exa%41mple.com', /DNS domain name/],
    ['a@example\uff0ecom', /DNS domain name/],
    ['a@example..com', /DNS domain name/],
    ['a@', /DNS domain name/],
    ['a@b@example.com', /local part/],
    ['"a b"@example.com', /local part/],
    ['a..b@example.com', /local part/],
    ['.a@example.com', /local part/],
    ['@example.com', /local part/],
    ['Ops <ops@example.com>', /local part/],
    ['ops(comment)@example.com', /local part/],
    ['jörg@example.com', /local part/],
    [`${'a'.repeat(65)}@example.com`, /local part/],
    ['opsexample.com', /no @/],
    [`a@${'b'.repeat(250)}.com`, /longer than 254/],
  ])('%j: %s', (v, want) => {
    const p = emailAddressProblem(v);
    if (want === null) expect(p).toBeNull();
    else expect(p).toMatch(want);
  });

  it('names the problem, never the address', () => {
    expect(emailAddressProblem('secret-user@[10.0.0.1]')).not.toContain('10.0.0.1');
  });
});

describe('parseSenderDomains', () => {
  it.each<[string[], string, string[]]>([
    [[], 'certmgr-notify@example.com', ['example.com']],
    [[], 'Certificates <certs@Mail.Example.com>', ['mail.example.com']],
    [[], 'certmgr-notify@localhost', ['localhost']],
    [['example.com', '*.example.org'], 'x@other.net', ['example.com', '*.example.org']],
    [['Example.COM', 'example.com', ' bücher.de '], 'x@other.net', ['example.com', 'xn--bcher-kva.de']],
  ])('%j with --smtp-from %j: %j', (entries, from, want) => {
    expect(parseSenderDomains(entries, from)).toEqual(want);
  });

  it.each<[string[], string, RegExp]>([
    [['[127.0.0.1]'], 'x@example.com', /'\[127\.0\.0\.1\]' is not a domain name or \*\.domain: it has an address literal/],
    [['10.0.0.1'], 'x@example.com', /IP address/],
    [['*'], 'x@example.com', /'\*' is not a domain name/],
    [['*.com.'], 'x@example.com', /not a domain name/],
    [['a@example.com'], 'x@example.com', /not a domain name/],
    [[], 'no-domain', /--smtp-from 'no-domain' has no domain/],
  ])('refuses %j (from %j)', (entries, from, want) => {
    expect(() => parseSenderDomains(entries, from)).toThrow(want);
  });
});

describe('senderDomainAllowed and senderProblem', () => {
  const allowed = ['example.com', '*.example.org'];
  it.each<[string, boolean]>([
    ['example.com', true],
    ['mail.example.com', false],
    ['example.org', false],
    ['team.example.org', true],
    ['a.b.example.org', true],
    ['evilexample.org', false],
    ['bank.test', false],
  ])('%s: %s', (domain, want) => expect(senderDomainAllowed(domain, allowed)).toBe(want));

  it.each<[string, RegExp | null]>([
    ['certs@example.com', null],
    ['certs@EXAMPLE.com', null],
    ['certs@team.example.org', null],
    [
      'payments@bank.test',
      /uses the sender domain bank\.test, which this service's SMTP relay does not send for; allowed: example\.com, \*\.example\.org/,
    ],
    ['payments@[127.0.0.1]', /is not a plain email address: it has an address literal/],
  ])('%s: %s', (from, want) => {
    const p = senderProblem(from, allowed);
    if (want === null) expect(p).toBeNull();
    else expect(p).toMatch(want);
  });

  it('emailDomainOf gives the ASCII, lower-case domain', () => {
    expect(emailDomainOf('a@Bücher.DE')).toBe('xn--bcher-kva.de');
  });
});
