import { describe, expect, it } from 'vitest';
import { unmatchedEvents } from '../../src/ingest/pipeline.js';

describe('unmatchedEvents (expiration events nobody is told about)', () => {
  const p = (deliveries: number, grouped: number) => ({
    deliveries: Array.from({ length: deliveries }) as never[],
    grouped: Array.from({ length: grouped }) as never[],
  });
  it.each([
    { name: 'no events', planned: [], want: 0 },
    { name: 'no delivery, no group member', planned: [p(0, 0)], want: 1 },
    { name: 'a delivery (silenced ones are rows too)', planned: [p(1, 0)], want: 0 },
    { name: 'only a group member', planned: [p(0, 1)], want: 0 },
    { name: 'mixed', planned: [p(0, 0), p(2, 0), p(0, 0), p(0, 3)], want: 2 },
  ])('$name', ({ planned, want }) => {
    expect(unmatchedEvents(planned)).toBe(want);
  });
});
