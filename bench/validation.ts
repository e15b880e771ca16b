/**
 * Worst-case cost of strict input validation (docs/security.md#validation): validateEvent and the text
 * checks on hostile values as large as a 1 MiB request body allows. Prints the slowest of N runs per case.
 *
 *   node --import tsx bench/validation.ts        (~5 s)
 */
import { pathToFileURL } from 'node:url';
import { validateEvent } from '../src/events/schemas.js';
import { textProblem } from '../src/validation/formats.js';
import { parseEvents } from '../src/ingest/parse.js';

const MiB = 1 << 20;
const RUNS = Number(process.env.BENCH_RUNS ?? 20);

function issuer(over: Record<string, unknown>) {
  return {
    type: 'evt.healthstatus.certmgr-issuer.notready',
    data: {
      clusterId: '3f6c2a9e-8b1d-4c7a-9e52-1d0b7f4a6c31',
      clusterName: 'prod',
      issuerName: 'le',
      namespace: 'cert-manager',
      resourceId: '9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
      statusMessage: 'failed',
      statusReason: 'Failed',
      statusTransition: '2025-03-14T09:26:53Z',
      ...over,
    },
  };
}

function certificate(names: string[]) {
  return {
    type: 'evt.healthstatus.certmgr-certificate-resource.notready',
    data: {
      clusterName: 'prod',
      clusterId: '3f6c2a9e-8b1d-4c7a-9e52-1d0b7f4a6c31',
      certificateName: 'tls',
      namespace: 'shop',
      issuerName: 'ca',
      statusMessage: 'Issuing',
      unhealthyDuration: '0h12m3.5s',
      statusReason: 'DoesNotExist',
      statusTransition: '2025-03-15T22:41:09Z',
      subject: { commonName: 'a', countries: [], localities: [], organizationalUnits: [], organizations: [], provinces: [] },
      SANs: { 'DNS Names': names },
    },
  };
}

/** Inputs are built once, outside the timing (as JSON.parse hands them over: flat strings). */
function slowest<T>(input: T, f: (input: T) => unknown): number {
  f(input); // warm-up
  let worst = 0;
  for (let i = 0; i < RUNS; i++) {
    const t = process.hrtime.bigint();
    f(input);
    worst = Math.max(worst, Number(process.hrtime.bigint() - t) / 1e6);
  }
  return worst;
}

export async function run(): Promise<void> {
  const name250 = (i: number) => `${String(i).padStart(6, '0')}.${'a'.repeat(243)}`;
  const names = Array.from({ length: 4000 }, (_, i) => name250(i));
  type Case = [string, unknown, (input: never) => unknown];
  const ev = (input: unknown) => validateEvent(input);
  const cases: Case[] = [
    ['statusMessage of 1 MiB, clean', issuer({ statusMessage: 'x'.repeat(MiB) }), ev],
    ['statusMessage of 1 MiB, NUL at the end', issuer({ statusMessage: 'x'.repeat(MiB - 1) + '\0' }), ev],
    ['statusMessage of 256 Ki emoji (1 MiB UTF-8), NUL at the end', issuer({ statusMessage: '😀'.repeat(MiB / 4) + '\0' }), ev],
    ['4,000 DNS names × 250 chars, clean', certificate(names), ev],
    ['4,000 DNS names × 250 chars, ZWSP in the last', certificate([...names.slice(1), names[0] + '\u200b']), ev],
    ['statusTransition of 1 MiB digits', issuer({ statusTransition: '1'.repeat(MiB) }), ev],
    ['statusTransition with 1 MiB of fraction', issuer({ statusTransition: `2025-03-14T09:26:53.${'1'.repeat(MiB)}Z` }), ev],
    ['clusterId of 1 MiB', issuer({ clusterId: 'a'.repeat(MiB) }), ev],
    ['batch of 1,000 valid events', Array.from({ length: 1000 }, () => issuer({})), (input: unknown) => parseEvents(input)],
    ['name check: 1 MiB name, bidi override at the end', 'n'.repeat(MiB) + '\u202e', (input: string) => textProblem(input, 'name', 255)],
  ];
  for (const [, input] of cases) if (typeof input === 'string') input.charCodeAt(0); // flatten
  console.log(`slowest of ${RUNS} runs (ms)`);
  for (const [label, input, f] of cases)
    console.log(
      `${slowest(input as never, f)
        .toFixed(2)
        .padStart(9)}  ${label}`,
    );
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) await run();
