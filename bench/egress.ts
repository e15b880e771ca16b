/**
 * Egress policy figures for docs/security.md#egress-policy (about 10 s):
 * - cost of EgressPolicy.checkAddress / checkUrl;
 * - 1,000 aliases of testIntegration in one request against the real service (SQLite in memory,
 *   --egress-allow 127.0.0.1/32, one loopback WEBHOOK receiver): how many POSTs reach the receiver.
 *
 *   node --import tsx bench/egress.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { EgressPolicy, parseEgressAllow } from '../src/integrations/egress.js';
import { startTestService } from '../test/support/service.js';

function perCall(n: number, f: (i: number) => unknown): number {
  for (let i = 0; i < Math.min(n, 20_000); i++) f(i); // warm-up
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f(i);
  return Number(process.hrtime.bigint() - t0) / n / 1000;
}

async function aliases(): Promise<Record<string, unknown>> {
  let posts = 0;
  const server = createServer((req, res) => {
    posts++;
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const svc = await startTestService('sqlite');
  try {
    const created = await svc
      .gql()
      .request<{ createWebhookIntegration: { id: string } }>(
        `mutation($u: String!) { createWebhookIntegration(input: { name: "h", url: $u }) { id } }`,
        { u: url },
      );
    const id = created.createWebhookIntegration.id;
    const doc = `mutation($id: UUID!) { ${Array.from({ length: 1000 }, (_, i) => `t${i}: testIntegration(id: $id) { outcome }`).join(' ')} }`;
    const t0 = Date.now();
    const res = await svc.rest('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: doc, variables: { id } }),
    });
    const body = (await res.json()) as { data?: Record<string, { outcome: string }> | null };
    const ms = Date.now() - t0;
    const outcomes: Record<string, number> = {};
    for (const v of Object.values(body.data ?? {})) outcomes[v.outcome] = (outcomes[v.outcome] ?? 0) + 1;
    return { requestBytes: doc.length, status: res.status, ms, posts, outcomes };
  } finally {
    await svc.close();
    server.close();
  }
}

export async function run(): Promise<void> {
  const p = new EgressPolicy(parseEgressAllow(['10.0.0.0/8', '*.corp.example']));
  const addrs = ['8.8.8.8', '127.0.0.1', '2606:4700:4700::1111', '::ffff:127.0.0.1', '64:ff9b::808:808', 'fd00::1'];
  const urls = [
    'https://hooks.slack.com/services/T/B/x',
    'http://0x7f000001:8080/x',
    'https://u:p@x.example/',
    'http://[::ffff:a9fe:a9fe]/',
  ];
  console.log(`checkAddress: ${perCall(300_000, (i) => p.checkAddress(addrs[i % addrs.length]!)).toFixed(2)} µs per address`);
  console.log(`checkUrl: ${perCall(100_000, (i) => p.checkUrl(urls[i % urls.length]!)).toFixed(2)} µs per URL`);
  console.log(`1,000 testIntegration aliases: ${JSON.stringify(await aliases())}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
