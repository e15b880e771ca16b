/** parseRateLimit: an integration's own send rate as the API takes it, and the operator's bound (tables). */
import { describe, expect, it } from 'vitest';
import { ServiceError } from '../../src/model/errors.js';
import { parseRateLimit, rateLimitView } from '../../src/service/rate-limits.js';

const F = 'input.rateLimit';

describe('parseRateLimit', () => {
  it.each([
    ['left out: the type default on create, unchanged on update', undefined, 0, undefined],
    ['null: back to the type default', null, 0, null],
    ['a rate and a burst', { perSecond: 5, burst: 2 }, 0, { ratePerSec: 5, burst: 2 }],
    ['a fraction (one every two seconds)', { perSecond: 0.5, burst: 5 }, 0, { ratePerSec: 0.5, burst: 5 }],
    ['no burst: one second’s worth', { perSecond: 7.5 }, 0, { ratePerSec: 7.5, burst: 8 }],
    ['no burst, below one a second: 1', { perSecond: 0.2, burst: null }, 0, { ratePerSec: 0.2, burst: 1 }],
    ['0: unlimited (the burst does not matter)', { perSecond: 0, burst: 999 }, 0, { ratePerSec: 0, burst: 1 }],
    ['at the operator’s bound', { perSecond: 100, burst: 10 }, 100, { ratePerSec: 100, burst: 10 }],
    ['the smallest and the largest', { perSecond: 0.01, burst: 1000 }, 0, { ratePerSec: 0.01, burst: 1000 }],
  ] as const)('%s', (_name, input, bound, want) => {
    expect(parseRateLimit(F, input, bound)).toEqual(want);
  });

  it.each([
    ['not an object', 5, 0, F, /input\.rateLimit must be an object/],
    ['a list', [1], 0, F, /input\.rateLimit must be an object/],
    ['no rate', { burst: 2 }, 0, `${F}.perSecond`, /input\.rateLimit\.perSecond must be a number/],
    ['a rate as text', { perSecond: '5' }, 0, `${F}.perSecond`, /must be a number/],
    ['NaN', { perSecond: NaN }, 0, `${F}.perSecond`, /must be a number/],
    ['negative', { perSecond: -1 }, 0, `${F}.perSecond`, /must be 0 \(unlimited\) or from 0\.01 to 10000, got -1/],
    ['too slow to be a limit', { perSecond: 0.001 }, 0, `${F}.perSecond`, /from 0\.01 to 10000, got 0\.001/],
    ['too fast', { perSecond: 20_000 }, 0, `${F}.perSecond`, /from 0\.01 to 10000, got 20000/],
    ['a fractional burst', { perSecond: 5, burst: 1.5 }, 0, `${F}.burst`, /input\.rateLimit\.burst must be a whole number from 1 to 1000/],
    ['a zero burst', { perSecond: 5, burst: 0 }, 0, `${F}.burst`, /from 1 to 1000/],
    ['a huge burst', { perSecond: 5, burst: 1e6 }, 0, `${F}.burst`, /from 1 to 1000/],
    [
      'above the operator’s bound',
      { perSecond: 500, burst: 10 },
      100,
      `${F}.perSecond`,
      /input\.rateLimit\.perSecond 500 is above this service's bound of 100 per second \(the operator's maxIntegrationRate in --limits-file\)/,
    ],
    [
      'unlimited under a bound',
      { perSecond: 0 },
      100,
      `${F}.perSecond`,
      /input\.rateLimit\.perSecond 0 \(unlimited\) is not allowed by this service: it bounds an integration's rate at 100 per second \(the operator's maxIntegrationRate in --limits-file\)/,
    ],
  ] as const)('refuses %s, naming the field', (_name, input, bound, field, message) => {
    let err: unknown;
    try {
      parseRateLimit(F, input, bound);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe('BAD_USER_INPUT');
    expect((err as ServiceError).field).toBe(field);
    expect((err as ServiceError).message).toMatch(message);
  });
});

describe('rateLimitView', () => {
  it('the integration’s own limit, else its type’s, and which one applies', () => {
    const def = { ratePerSec: 1, burst: 3 };
    expect(rateLimitView(undefined, def)).toEqual({ perSecond: 1, burst: 3, typeDefault: true });
    expect(rateLimitView(null, def)).toEqual({ perSecond: 1, burst: 3, typeDefault: true });
    expect(rateLimitView({ ratePerSec: 0, burst: 1 }, def)).toEqual({ perSecond: 0, burst: 1, typeDefault: false });
  });
});
