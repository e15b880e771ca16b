/**
 * What compiled regular expressions outlive: a filter's literal pattern belongs to the filter (freed with it,
 * never held by the shared cache); patterns read from the event go through a cache bounded by entries and
 * characters.
 */
import { describe, expect, it } from 'vitest';
import { regexCacheStats } from '../../src/cel/compile-js.js';
import { compileFilter } from '../../src/cel/index.js';
import type { EventTypeId } from '../../src/events/families.js';
import { expiringCertificate } from '../fixtures/events.js';

const EXPIRY: EventTypeId = 'cert-expiry-ext-notification-config';
/** The cost limits lifted: these tests are about memory, not the evaluation budget. */
const UNLIMITED = { maxEstimatedCost: 1e15, maxEvaluationCost: 1e15 };

/** A ~1.4 KB alternation, distinct per i (what a router's regex filter may look like). */
function longPattern(i: number): string {
  const alts: string[] = [];
  for (let k = 0; alts.join('|').length < 1400; k++) alts.push(`n${i}_${k}[a-z]+x`);
  return `^(${alts.join('|')})$`;
}

describe('regex cache', () => {
  it('holds nothing of filters with literal patterns, however many were compiled and evaluated', () => {
    const before = regexCacheStats();
    for (let i = 0; i < 200; i++) {
      const f = compileFilter(`data.message.matches('${longPattern(i)}')`, EXPIRY, UNLIMITED);
      expect(f.engine).toBe('compiled');
      expect(f.evaluate(expiringCertificate({ message: `n${i}_0abcx` })).matched).toBe(true);
    }
    expect(regexCacheStats()).toEqual(before);
  });

  it('bounds the patterns read from the event by entries and characters', () => {
    const f = compileFilter('data.message.matches(data.name)', EXPIRY, UNLIMITED);
    expect(f.engine).toBe('compiled');
    for (let i = 0; i < 500; i++) {
      const r = f.evaluate(expiringCertificate({ message: `n${i}_0abcx`, name: longPattern(i) }));
      expect(r).toEqual({ matched: true });
    }
    const s = regexCacheStats();
    expect(s.entries).toBeGreaterThan(0);
    expect(s.entries).toBeLessThanOrEqual(64);
    expect(s.chars).toBeLessThanOrEqual(16_384);
  });
});
