/**
 * Egress policy: tenant-given URLs cannot reach
 * loopback, private, link-local or metadata destinations, in any literal form, through a host name
 * that resolves there (also when it re-resolves: DNS rebinding), or through a redirect. Real loopback
 * receivers count TCP connections: a refused destination must not even be connected to.
 */
import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deniedRange, EGRESS_DENIED, EgressPolicy, parseEgressAllow, type DispatcherOptions } from '../../src/integrations/egress.js';
import { postAndClassify } from '../../src/integrations/http.js';
import { createNotifier } from '../../src/integrations/index.js';
import { integrationOptions, type IntegrationType } from '../../src/integrations/types.js';
import { EVENTS, integration, notification } from './helpers.js';

const DENIED_MESSAGE = `network error: destination not allowed by the egress policy (${EGRESS_DENIED})`;

describe('deniedRange', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'shared address space (CGNAT)'],
    ['100.100.100.200', 'shared address space (CGNAT)'], // Alibaba metadata
    ['169.254.169.254', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved or broadcast'],
    ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fc00::1', 'private'],
    ['fd00:ec2::254', 'private'], // AWS IPv6 metadata
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['0:0:0:0:0:ffff:10.0.0.1', 'private'],
    ['64:ff9b::7f00:1', 'loopback'], // NAT64 of 127.0.0.1
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:7f00:1::1', 'loopback'], // 6to4 of 127.0.0.1
    ['2001::1', 'reserved'], // Teredo
    ['2001:db8::1', 'documentation'],
    ['::127.0.0.1', 'reserved'], // IPv4-compatible
    ['not-an-ip', 'not an IP address'],
    ['fe80::1%eth0', 'scoped (zone id)'],
    ['2606:4700::1%eth0', 'scoped (zone id)'],
  ])('%s -> %s', (ip, range) => {
    expect(deniedRange(ip)).toBe(range);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('%s is public', (ip) => {
    expect(deniedRange(ip)).toBeNull();
  });
});

describe('parseEgressAllow', () => {
  it('accepts CIDRs, addresses, host names and *.domain', () => {
    expect(parseEgressAllow(['10.0.0.0/8', '127.0.0.1', '[::1]', 'fd00::/8', 'Hooks.Corp.Example.', '*.corp.example'])).toEqual({
      cidrs: ['10.0.0.0/8', '127.0.0.1/32', '::1/128', 'fd00::/8'],
      hosts: ['hooks.corp.example', '*.corp.example'],
    });
  });
  it.each(['10.0.0.0/33', '10.0.0/8', '::1/129', 'http://x', 'a b', '', '*', '1.2.3.4/8/1', '300.1.1.1'])('refuses %j, naming it', (e) => {
    expect(() => parseEgressAllow([e])).toThrow(`'${e}' is neither a CIDR`);
  });
});

describe('EgressPolicy.checkUrl (create/update and before a send)', () => {
  const deny = new EgressPolicy();
  it.each([
    ['http://127.0.0.1/x', /loopback/],
    ['http://0x7f000001/x', /loopback/],
    ['http://2130706433/x', /loopback/],
    ['http://0177.0.0.1/x', /loopback/],
    ['http://127.1/x', /loopback/],
    ['http://%31%32%37.0.0.1/x', /loopback/],
    ['http://[::1]/x', /loopback/],
    ['http://[::ffff:127.0.0.1]/x', /loopback/],
    ['http://[0:0:0:0:0:ffff:169.254.169.254]/latest/meta-data', /link-local/],
    ['http://169.254.169.254/latest/meta-data', /link-local/],
    ['http://0/x', /unspecified/],
    ['http://10.0.0.1/x', /private/],
    ['http://[fd00::1]/x', /private/],
    ['http://metadata.google.internal/computeMetadata/v1/', /cloud metadata host/],
    ['http://METADATA.google.internal./computeMetadata/v1/', /cloud metadata host/],
    ['https://user:pass@hooks.example.com/x', /must not carry credentials/],
    ['https://token@hooks.example.com/x', /must not carry credentials/],
    ['https://hooks.example.com:0/x', /port between 1 and 65535/],
    ['ftp://hooks.example.com/x', /http\(s\)/],
    ['file:///etc/passwd', /http\(s\)/],
    ['not a url', /not a valid URL/],
  ])('%s is refused', (url, why) => {
    expect(deny.checkUrl(url)).toMatch(why);
  });

  it('names the problem, never the URL (it may carry a token)', () => {
    expect(deny.checkUrl('https://user:s3cr3t@hooks.example.com/T/B/t0k3n')).not.toMatch(/s3cr3t|t0k3n|hooks/);
  });

  it.each([
    'https://hooks.slack.com/services/T/B/x',
    'http://93.184.216.34:8080/hook',
    'https://[2606:4700:4700::1111]/x',
    'http://localhost:8080/x',
  ])('%s passes (names are judged at connect time, by what they resolve to)', (url) => {
    expect(deny.checkUrl(url)).toBeNull();
  });

  it('the allow-list wins over the deny-list', () => {
    const allow = new EgressPolicy(parseEgressAllow(['10.0.0.0/8', '::1', 'metadata.google.internal']));
    expect(allow.checkUrl('http://10.1.2.3/x')).toBeNull();
    expect(allow.checkUrl('http://[::1]/x')).toBeNull();
    expect(allow.checkUrl('http://metadata.google.internal/x')).toBeNull();
    expect(allow.checkUrl('http://127.0.0.1/x')).toMatch(/loopback/);
    expect(allow.checkUrl('https://u:p@10.1.2.3/x')).toMatch(/credentials/); // still no userinfo
  });
});

/** A loopback HTTP server that counts TCP connections, not only requests. */
interface Counting {
  port: number;
  connections: number;
  requests: number;
  close(): Promise<void>;
}

async function countingServer(host: string, handler?: Parameters<typeof createServer>[1]): Promise<Counting | null> {
  const server: Server = createServer((req, res) => {
    c.requests++;
    if (handler) handler(req, res);
    else res.end('internal secret: do-not-leak');
  });
  const c: Counting = { port: 0, connections: 0, requests: 0, close: async () => {} };
  server.on('connection', () => c.connections++);
  const ok = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(0, host, () => resolve(true));
  });
  if (!ok) return null;
  c.port = (server.address() as AddressInfo).port;
  c.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return c;
}

const ctx = (dispatcher: ReturnType<EgressPolicy['dispatcher']>) => ({
  timeoutMs: 2000,
  userAgent: 'egress-test',
  clock: Date.now,
  dispatcher,
});
const post = (url: string, dispatcher: ReturnType<EgressPolicy['dispatcher']>) =>
  postAndClassify({ url, body: '{}', secrets: [url] }, ctx(dispatcher));

/** A resolver standing in for DNS: fixed answers per name, and a record of what was asked. */
function fakeDns(answers: Record<string, string[]>): { lookup: NonNullable<DispatcherOptions['lookup']>; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    lookup: (hostname, _opts, cb) => {
      asked.push(hostname);
      const a = answers[hostname];
      if (!a) return cb(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }), []);
      cb(
        null,
        a.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
    },
  };
}

describe('connect-time guard (the dispatcher alone, without the early URL check)', () => {
  let v4: Counting;
  let v6: Counting | null;
  const deny = new EgressPolicy();

  beforeAll(async () => {
    v4 = (await countingServer('127.0.0.1'))!;
    v6 = await countingServer('::1'); // null where the host has no IPv6 loopback: the v6 forms are still refused
  });
  afterAll(async () => {
    await v4.close();
    await v6?.close();
  });
  beforeEach(() => {
    v4.connections = v4.requests = 0;
    if (v6) v6.connections = v6.requests = 0;
  });

  const forms = (p: () => number, p6: () => number) =>
    [
      ['127.0.0.1', () => `http://127.0.0.1:${p()}/hook`],
      ['0x7f000001', () => `http://0x7f000001:${p()}/hook`],
      ['2130706433', () => `http://2130706433:${p()}/hook`],
      ['0177.0.0.1', () => `http://0177.0.0.1:${p()}/hook`],
      ['127.1', () => `http://127.1:${p()}/hook`],
      ['[::ffff:127.0.0.1]', () => `http://[::ffff:127.0.0.1]:${p()}/hook`],
      ['[::1]', () => `http://[::1]:${p6()}/hook`],
      ['localhost (resolves to loopback)', () => `http://localhost:${p()}/hook`],
    ] as const;

  it.each(
    forms(
      () => v4.port,
      () => v6?.port ?? v4.port,
    ),
  )('%s: refused, nothing connects', async (_name, url) => {
    const r = await post(url(), deny.dispatcher());
    expect(r).toEqual({ outcome: 'dead', error: DENIED_MESSAGE });
    expect(v4.connections + (v6?.connections ?? 0)).toBe(0);
  });

  it('169.254.169.254 and metadata.google.internal are refused before connecting or resolving', async () => {
    const dns = fakeDns({ 'metadata.google.internal': ['169.254.169.254'] });
    const d = deny.dispatcher({ lookup: dns.lookup });
    expect(await post('http://169.254.169.254/latest/meta-data/iam/security-credentials/', d)).toEqual({
      outcome: 'dead',
      error: DENIED_MESSAGE,
    });
    expect(await post('http://metadata.google.internal/computeMetadata/v1/', d)).toEqual({ outcome: 'dead', error: DENIED_MESSAGE });
    expect(dns.asked).toEqual([]);
  });

  it('DNS rebinding: a name that passed the early check but resolves to loopback at connect time is refused', async () => {
    const dns = fakeDns({ 'rebind.example': ['127.0.0.1'], 'mixed.example': ['93.184.216.34', '127.0.0.1'] });
    const d = deny.dispatcher({ lookup: dns.lookup });
    expect(deny.checkUrl(`http://rebind.example:${v4.port}/hook`)).toBeNull();
    expect(await post(`http://rebind.example:${v4.port}/hook`, d)).toEqual({ outcome: 'dead', error: DENIED_MESSAGE });
    // Every address of the answer is checked, not only the first.
    expect(await post(`http://mixed.example:${v4.port}/hook`, d)).toEqual({ outcome: 'dead', error: DENIED_MESSAGE });
    expect(dns.asked).toEqual(['rebind.example', 'mixed.example']);
    expect(v4.connections).toBe(0);
  });

  it('positive controls: allowed CIDR and allowed host name do connect (the refusals above are the policy, not the setup)', async () => {
    const byCidr = new EgressPolicy(parseEgressAllow(['127.0.0.0/8']));
    expect(await post(`http://0x7f000001:${v4.port}/hook`, byCidr.dispatcher())).toMatchObject({ outcome: 'delivered', statusCode: 200 });
    const dns = fakeDns({ 'hooks.corp.example': ['127.0.0.1'] });
    const byHost = new EgressPolicy(parseEgressAllow(['*.corp.example']));
    expect(await post(`http://hooks.corp.example:${v4.port}/hook`, byHost.dispatcher({ lookup: dns.lookup }))).toMatchObject({
      outcome: 'delivered',
    });
    expect(v4.requests).toBe(2);
  });

  it('a redirect is not followed, so an allowed receiver cannot bounce the request inward', async () => {
    const bouncer = (await countingServer('127.0.0.1', (_req, res) =>
      res.writeHead(307, { location: `http://127.0.0.1:${v4.port}/internal` }).end(),
    ))!;
    try {
      const allowBouncer = new EgressPolicy(parseEgressAllow(['127.0.0.1']));
      const r = await post(`http://127.0.0.1:${bouncer.port}/hook`, allowBouncer.dispatcher());
      expect(r).toMatchObject({ outcome: 'dead', statusCode: 307, error: 'HTTP 307 redirect not followed' });
      expect(v4.connections).toBe(0);
    } finally {
      await bouncer.close();
    }
  });
});

describe.each(['WEBHOOK', 'SLACK', 'TEAMS'] as IntegrationType[])('%s notifier with the default policy (no allow-list)', (type) => {
  let rx: Counting;
  beforeAll(async () => {
    rx = (await countingServer('127.0.0.1'))!;
  });
  afterAll(() => rx.close());

  const send = (url: string) => {
    const integ = integration(type, type === 'WEBHOOK' ? { url } : { webhookUrl: url });
    return createNotifier(type, integrationOptions({ timeoutMs: 2000 })).send(
      notification(integ, EVENTS['evt.healthstatus.certmgr-issuer.notready']),
    );
  };

  it.each([
    'http://127.0.0.1:PORT/x',
    'http://0x7f000001:PORT/x',
    'http://2130706433:PORT/x',
    'http://0177.0.0.1:PORT/x',
    'http://[::1]:PORT/x',
    'http://u:p@127.0.0.1:PORT/x',
  ])('%s is dead without a connection', async (form) => {
    const r = await send(form.replace('PORT', String(rx.port)));
    expect(r.outcome).toBe('dead');
    expect(r.error).toMatch(/egress policy|credentials/);
    expect(r.error).not.toContain(String(rx.port));
    expect(rx.connections).toBe(0);
  });

  it('a name resolving to loopback is dead at connect time, without a connection', async () => {
    const r = await send(`http://localhost:${rx.port}/x`);
    expect(r).toEqual({ outcome: 'dead', error: DENIED_MESSAGE });
    expect(rx.connections).toBe(0);
  });
});
