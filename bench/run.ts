/**
 * `npm run bench`: every benchmark, one after the other, in this process.
 * Each bench module exports `run(): Promise<void>` (and runs itself when it is the entry point, so it can also
 * be started alone with `node --import tsx bench/<name>.ts`). Modules not written yet are skipped.
 */
import { existsSync } from 'node:fs';

const BENCHES = [
  'routing',
  'cel-eval',
  'delivery',
  'cel-budget',
  'requests',
  'validation',
  'egress',
  'bounded-state',
  'secrets',
  'api-polish',
  'emitter-sanitize',
  'order',
  'health-path',
  'probe-memory',
  'scale',
  'peers',
] as const;

for (const name of BENCHES) {
  const file = new URL(`./${name}.ts`, import.meta.url);
  if (!existsSync(file)) {
    console.log(`\n== ${name}: bench/${name}.ts not present, skipped`);
    continue;
  }
  console.log(`\n== ${name}`);
  const mod = (await import(file.href)) as { run?: () => Promise<void> };
  if (typeof mod.run !== 'function') throw new Error(`bench/${name}.ts must export run(): Promise<void>`);
  await mod.run();
}
