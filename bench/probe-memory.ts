/**
 * Native memory of the serving prober's TLS probes: BENCH_PROBES probes (default 6,000, 16 at once) of a loopback
 * TLS server presenting an RSA-2048 leaf and its CA (cert-manager's default key), in a process that holds a
 * BENCH_PROBE_RETAIN_MIB live heap (default 150: an agent's caches at scale, so full GCs are rare, as in the
 * agent). Each variant runs in a process of its own; the figure is the growth of glibc's main arena (`[heap]` in
 * /proc/self/smaps) per 1,000 probes, which V8 neither sees nor bounds:
 *   - the product's probeTls (src/emitter/serving/probe.ts);
 *   - baselines, plain node:tls: tls.connect's default (a new OpenSSL context for every connection) with
 *     getPeerCertificate(false).raw, and one shared context with getPeerX509Certificate().raw (an
 *     X509Certificate object holds OpenSSL's parsed copy until it is collected).
 *
 *   node_modules/.bin/node --import tsx bench/probe-memory.ts        (~1 min)
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createSecureContext, createServer, type ConnectionOptions, type SecureContext, type TLSSocket } from 'node:tls';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { probeTls } from '../src/emitter/serving/probe.js';
import { generateTlsMaterial } from './lib/kube-bench.js';

const PROBES = Number(process.env['BENCH_PROBES'] ?? 6000);
const RETAIN_MIB = Number(process.env['BENCH_PROBE_RETAIN_MIB'] ?? 150);
const VARIANTS = [
  'product probeTls',
  'node:tls, a context per connection (its default), getPeerCertificate(false)',
  'node:tls, one shared context, getPeerX509Certificate()',
] as const;
type Variant = (typeof VARIANTS)[number];

/** KiB resident in glibc's main arena. */
function nativeHeapKiB(): number {
  let current = '';
  let kib = 0;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const m = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) current = m[1] ?? '';
    else if (current === '[heap]' && line.startsWith('Rss:')) kib += Number(line.split(/\s+/)[1]);
  }
  return kib;
}

let shared: SecureContext | undefined;

function bareProbe(port: number, x509: boolean): Promise<void> {
  return new Promise((resolve) => {
    const options: ConnectionOptions = { host: '127.0.0.1', port, servername: 'app-0.bench.example.com', rejectUnauthorized: false };
    if (x509) options.secureContext = shared ??= createSecureContext();
    const s: TLSSocket = connect(options);
    s.once('secureConnect', () => {
      const raw = x509 ? s.getPeerX509Certificate()?.raw : s.getPeerCertificate(false)?.raw;
      if (!raw?.length) throw new Error('no certificate');
      s.end();
      resolve();
    });
    s.once('error', () => resolve());
  });
}

/** One variant, in this process: the arena's growth per 1,000 probes (KiB). */
async function measure(variant: Variant, port: number): Promise<number> {
  const retained: { a: string; b: number }[] = [];
  for (let i = 0; i < RETAIN_MIB * 6_000; i++) retained.push({ a: `k${i}`, b: i });
  const one = (): Promise<unknown> =>
    variant === 'product probeTls'
      ? probeTls({ host: 'app-0.bench.example.com', address: `127.0.0.1:${port}` }, { timeoutMs: 5_000 })
      : bareProbe(port, variant === VARIANTS[2]);
  // the first 1,000 warm up (OpenSSL's and Node's one-time allocations); the growth is counted after them
  let started = 0;
  let before = 0;
  const worker = async (): Promise<void> => {
    while (started < PROBES) {
      if (started++ === 1_000) before = nativeHeapKiB();
      await one();
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  const growth = ((nativeHeapKiB() - before) / (PROBES - 1_000)) * 1_000;
  // read after the probes, so the retained heap lives through them
  if (retained.length !== RETAIN_MIB * 6_000) throw new Error('the retained heap was not kept');
  return growth;
}

export async function run(): Promise<void> {
  const [m] = generateTlsMaterial(1);
  const server = createServer({ key: m!.key, cert: m!.crt }, (s) => {
    s.on('error', () => {});
    s.end();
  });
  server.on('tlsClientError', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  console.log(
    `${PROBES} probes of an RSA-2048 leaf + CA, 16 at once, beside a ${RETAIN_MIB} MiB live heap; native heap growth per 1,000 probes:`,
  );
  try {
    for (const variant of VARIANTS) {
      const child = spawn(
        process.execPath,
        [...process.execArgv, '--max-semi-space-size=1', '--max-old-space-size=512', fileURLToPath(import.meta.url)],
        {
          env: { ...process.env, BENCH_PROBE_VARIANT: variant, BENCH_PROBE_PORT: String(port), MALLOC_ARENA_MAX: '2' },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      await new Promise((r) => child.once('exit', r));
      console.log(`${out.trim().padStart(10)} KiB  ${variant}`);
    }
  } finally {
    server.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  const variant = process.env['BENCH_PROBE_VARIANT'] as Variant | undefined;
  if (variant) console.log((await measure(variant, Number(process.env['BENCH_PROBE_PORT']))).toFixed(0));
  else await run();
}
