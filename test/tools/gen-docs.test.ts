/** The generated reference pages (docs/flags.md) are what src/tools/gen-docs.ts makes from the code today. */
import { describe, expect, it } from 'vitest';
import { AGENT_FLAGS, SERVE_FLAGS, envName } from '../../src/config.js';
import { docsDrift, generatedDocs } from '../../src/tools/gen-docs.js';

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
