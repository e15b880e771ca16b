/** The egress policy's refusal classes (the reason label of certmgr_notify_egress_refused_total) and close(). */
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { fetch } from 'undici';
import { describe, expect, it } from 'vitest';
import { EgressPolicy, parseEgressAllow, refusalClass, type EgressRefusal, type EgressStage } from '../../src/integrations/egress.js';

describe('classifyUrl', () => {
  const policy = new EgressPolicy();
  const cases: [string, EgressRefusal | null][] = [
    ['https://hooks.example.com/x', null],
    ['not a url', 'invalid_url'],
    ['ftp://hooks.example.com/x', 'scheme'],
    ['https://user:pass@hooks.example.com/x', 'userinfo'],
    ['https://:pass@hooks.example.com/x', 'userinfo'],
    ['https://hooks.example.com:0/x', 'port'],
    ['http://127.0.0.1/x', 'denied_address'],
    ['http://0x7f000001/x', 'denied_address'],
    ['http://[::ffff:10.0.0.1]/x', 'denied_address'],
    ['http://169.254.169.254/latest', 'denied_address'],
    ['http://metadata.google.internal/x', 'metadata_host'],
    ['http://METADATA.goog./x', 'metadata_host'],
  ];
  it.each(cases)('%s -> %s', (url, want) => {
    expect(policy.classifyUrl(url)?.reason ?? null).toBe(want);
  });

  it('the reason never carries the address', () => {
    for (const [url] of cases) {
      const r = policy.classifyUrl(url);
      if (r) expect(r.reason).toMatch(/^[a-z_]+$/);
    }
  });
});

describe('refusalClass', () => {
  it.each([
    ['loopback', 'denied_address'],
    ['private', 'denied_address'],
    ['link-local', 'denied_address'],
    ['scoped (zone id)', 'denied_address'],
    ['cloud metadata host', 'metadata_host'],
  ])('%s -> %s', (range, want) => expect(refusalClass(range)).toBe(want));
});

describe('onRefused', () => {
  it('reports checkUrl refusals with the stage, allowed URLs not at all', () => {
    const seen: [EgressRefusal, EgressStage][] = [];
    const p = new EgressPolicy(undefined, { onRefused: (r, s) => seen.push([r, s]) });
    p.checkUrl('http://10.1.2.3/x');
    p.checkUrl('https://u:p@hooks.example.com/', 'connect');
    p.checkUrl('https://hooks.example.com/');
    expect(seen).toEqual([
      ['denied_address', 'create_update'],
      ['userinfo', 'connect'],
    ]);
  });

  it('reports a connect-time refusal of the dispatcher', async () => {
    const seen: [EgressRefusal, EgressStage][] = [];
    const p = new EgressPolicy(undefined, { onRefused: (r, s) => seen.push([r, s]) });
    const d = p.dispatcher({ lookup: (_h, _o, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }]) });
    await expect(fetch('http://rebind.example.com:8080/', { dispatcher: d })).rejects.toThrow();
    expect(seen).toEqual([['denied_address', 'connect']]);
    await d.close();
  });
});

describe('close', () => {
  it('closes the shared dispatcher: its pooled connection ends, a request still in flight is cut', async () => {
    const sockets = new Set<Socket>();
    let hang = false;
    let arrived: () => void = () => {};
    const hanging = new Promise<void>((r) => (arrived = r));
    const server = createServer((req, res) => {
      req.resume();
      if (!hang) req.on('end', () => res.end('ok'));
      else arrived();
    });
    server.keepAliveTimeout = 600_000;
    server.on('connection', (s: Socket) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const p = new EgressPolicy(parseEgressAllow(['127.0.0.1']));
    try {
      expect((await fetch(url, { method: 'POST', body: 'x', dispatcher: p.dispatcher() })).status).toBe(200);
      hang = true;
      const pending = fetch(url, { method: 'POST', body: 'x', dispatcher: p.dispatcher() }).then(
        () => 'answered',
        () => 'cut',
      );
      await hanging; // in flight: a graceful close would wait for it
      await p.close();
      expect(await pending).toBe('cut');
      const left = [...sockets].map((s) => new Promise((r) => s.once('close', r)));
      await Promise.all(left);
      expect(sockets.size).toBe(0);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
