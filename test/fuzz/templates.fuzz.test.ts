/**
 * Fuzz: Liquid templates generated from loops (up to a hundred million items), captures, assigns, conditions,
 * nesting and the filters that grow strings, rendered as a title, a text and a GENERIC_WEBHOOK body the way the
 * delivery worker renders them. Properties: a render resolves or fails with a TemplateRenderError (never a
 * RangeError, an out-of-memory or another error), every output is within its limit, and the heap after the run is
 * back to its baseline.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileTemplate, renderTemplate, TEMPLATE_LIMITS, TemplateRenderError } from '../../src/templates/engine.js';
import type { TemplateParts } from '../../src/store/types.js';
import { check, fuzzParams, settledHeap } from './harness.js';

const VARS = ['a', 'b', 'c'] as const;
const variable = fc.constantFrom(...VARS);
const literal = fc.constantFrom('x', 'Ā', '😀', '"', '\\', '{"k":1}', ' ', 'ab'.repeat(50));
const count = fc.oneof(fc.constantFrom(1, 2, 1_000, 100_000, 100_000_000), fc.integer({ min: 16, max: 30 }));

const filter = fc.oneof(
  fc.tuple(fc.constantFrom('append', 'prepend'), variable).map(([f, v]) => ` | ${f}: ${v}`),
  fc.tuple(fc.constantFrom('replace'), literal, variable).map(([f, l, v]) => ` | ${f}: ${JSON.stringify(l)}, ${v}`),
  fc.constantFrom(' | upcase', ' | escape', ' | json', ' | split: "" | join: "-"', ' | size', ' | truncate: 20', ' | raw', ' | strip'),
);
const value = fc.tuple(variable, fc.array(filter, { maxLength: 3 })).map(([v, fs]) => `${v}${fs.join('')}`);

const node: fc.Arbitrary<string> = fc.letrec<{ node: string }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    literal,
    value.map((v) => `{{ ${v} }}`),
    fc.tuple(variable, value).map(([v, x]) => `{% assign ${v} = ${x} %}`),
    fc
      .tuple(variable, fc.array(tie('node'), { minLength: 1, maxLength: 3 }))
      .map(([v, b]) => `{% capture ${v} %}${b.join('')}{% endcapture %}`),
    // a capture of itself k times, in a loop: the growth LiquidJS charges nothing for unless the host bounds it
    fc
      .tuple(count, variable, fc.integer({ min: 2, max: 3 }))
      .map(([n, v, k]) => `{% for i in (1..${n}) %}{% capture ${v} %}${`{{ ${v} }}`.repeat(k)}{% endcapture %}{% endfor %}`),
    fc
      .tuple(count, fc.array(tie('node'), { minLength: 1, maxLength: 3 }))
      .map(([n, b]) => `{% for i in (1..${n}) %}${b.join('')}{% endfor %}`),
    fc.tuple(variable, tie('node'), tie('node')).map(([v, x, y]) => `{% if ${v} %}${x}{% else %}${y}{% endif %}`),
  ),
})).node;

const template = fc
  .tuple(literal, literal, fc.array(node, { minLength: 1, maxLength: 4 }))
  .map(
    ([a, b, nodes]) =>
      `{% assign a = ${JSON.stringify(a)} %}{% assign b = ${JSON.stringify(b)} %}{% assign c = a %}${nodes.join('')}{{ a }}{{ b }}{{ c }}`,
  );

describe('fuzz: generated templates render within their limits', () => {
  it('every render ends with a message within limits or a TemplateRenderError; the heap comes back', async () => {
    const baseline = await settledHeap();
    await check(fuzzParams(2611, 150), template, async (src) => {
      const parts = { default: { title: src, text: src }, GENERIC_WEBHOOK: { body: `{"v": "${src}"}` } } as TemplateParts;
      const c = compileTemplate(parts);
      if (!c.ok) return; // the generator writes valid Liquid; a refused source is not this property's concern
      for (const type of ['SLACK', 'GENERIC_WEBHOOK']) {
        try {
          const out = await renderTemplate(c.template, type, {});
          expect(Array.from(out.title ?? '').length).toBeLessThanOrEqual(TEMPLATE_LIMITS.maxTitleChars);
          expect(Array.from(out.text ?? '').length).toBeLessThanOrEqual(TEMPLATE_LIMITS.maxTextChars);
          expect((out.body ?? '').length).toBeLessThanOrEqual(TEMPLATE_LIMITS.maxBodyChars);
        } catch (err) {
          if (!(err instanceof TemplateRenderError)) throw err;
        }
      }
    });
    expect(await settledHeap()).toBeLessThan(baseline + 48 * 1024 * 1024);
  });
});
