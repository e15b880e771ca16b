/** The generated references (docs/flags.md, the metrics list of docs/observability.md) are what the code says today. */
import { describe, expect, it } from 'vitest';
import { AGENT_FLAGS, SERVE_FLAGS, envName } from '../../src/config.js';
import { DELIVERY_METRICS } from '../../src/delivery/worker.js';
import { LIMITS, formatLimit } from '../../src/limits.js';
import { REPO_ROOT } from '../../src/tools/gen-crds.js';
import { docsDrift, generatedDocs } from '../../src/tools/gen-docs.js';
import { metricsCatalog } from '../../src/tools/metrics-catalog.js';

describe('generated docs', () => {
  it('the committed pages equal the generated ones (else run npm run gen:docs)', async () => {
    expect(await docsDrift()).toEqual([]);
  });

  it('docs/flags.md names every serve and agent flag, and how their environment variables are named', async () => {
    const page = (await generatedDocs()).get('docs/flags.md')!;
    for (const f of [...SERVE_FLAGS, ...AGENT_FLAGS]) expect(page).toMatch(new RegExp(`^- \`--${f.name}[ \`]`, 'm'));
    expect(page).toContain(`\`--api-keys-file\`: \`${envName('api-keys-file')}\``);
  });
});

describe("the schema of the chart's limits value", () => {
  it('is generated from the limits table: each key with its kind, bounds and default', async () => {
    const schema = JSON.parse((await generatedDocs()).get('charts/certmgr-notify/values.schema.json')!) as {
      definitions: { limits: { properties: Record<string, { type?: string; minimum?: number; maximum?: number; description: string }> } };
    };
    const { properties } = schema.definitions.limits;
    expect(Object.keys(properties)).toEqual(LIMITS.map((l) => l.key));
    for (const l of LIMITS) {
      const p = properties[l.key]!;
      expect(p.description, l.key).toContain(`(default ${formatLimit(l, l.default)})`);
      if (l.kind === 'count') expect([p.type, p.minimum, p.maximum], l.key).toEqual(['integer', l.min, l.max]);
      else expect(p.description, l.key).toMatch(/^a duration, /);
    }
  });
});

describe('the metrics list of docs/observability.md', () => {
  it('names every metric the code registers, with its type, labels and help', async () => {
    const catalog = metricsCatalog(REPO_ROOT);
    expect(catalog.length).toBeGreaterThanOrEqual(40);
    expect(catalog.find((m) => m.name === 'certmgr_notify_deliveries_total')).toMatchObject({
      type: 'counter',
      labels: ['integration_type', 'outcome'],
    });
    const page = (await generatedDocs()).get('docs/observability.md')!;
    for (const m of catalog) expect(page).toContain(`- \`${m.name}\` (${m.type}`);
  });

  it('resolves names and help texts through module constants and template literals', () => {
    const poisoned = metricsCatalog(REPO_ROOT).find((m) => m.name === DELIVERY_METRICS.poisoned);
    expect(poisoned?.help).not.toContain('${');
  });
});
