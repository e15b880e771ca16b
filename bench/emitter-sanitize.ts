/**
 * Cost of the emitter's sanitizeEventData (docs/security.md#the-emitter-and-the-operator-under-these-limits) on cluster objects far past the
 * event limits (every character one the text rules refuse). Prints the median and slowest of N runs per case.
 *
 *   node --import tsx bench/emitter-sanitize.ts        (~3 s)
 */
import { pathToFileURL } from 'node:url';
import { sanitizeEventData } from '../src/events/sanitize.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 20);

function certificateData(dnsNames: number, message: string): Record<string, unknown> {
  return {
    clusterName: 'prod',
    clusterId: '6f1c2b3a-1111-4c2d-9e8f-0a1b2c3d4e5f',
    certificateName: 'web',
    namespace: 'shop',
    issuerName: 'le',
    statusMessage: message,
    unhealthyDuration: '0h5m0s',
    statusReason: 'Failed',
    statusTransition: '2026-01-01T00:00:00Z',
    subject: { commonName: '', countries: [], localities: [], organizationalUnits: [], organizations: [], provinces: [] },
    SANs: { 'DNS Names': Array.from({ length: dnsNames }, (_, i) => `${i}`.padEnd(253, '\u00ad')) },
  };
}

export async function run(): Promise<void> {
  const cases: [string, Record<string, unknown>][] = [
    ['4,000 DNS names of 253 soft hyphens + 40 KB message', certificateData(4000, 'x'.repeat(40_000))],
    ['100,000 DNS names of 253 soft hyphens + 1 MiB message of soft hyphens', certificateData(100_000, '\u00ad'.repeat(1 << 20))],
  ];
  console.log(`median / slowest of ${RUNS} runs (ms)`);
  for (const [label, data] of cases) {
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t = performance.now();
      sanitizeEventData('evt.healthstatus.certmgr-certificate-resource.notready', data);
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    console.log(`${times[Math.floor(RUNS / 2)]!.toFixed(1).padStart(7)} ${times[RUNS - 1]!.toFixed(1).padStart(7)}  ${label}`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) await run();
