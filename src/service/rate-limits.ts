/**
 * An integration's own send rate as the API takes it (`rateLimit: { perSecond, burst }`) and shows it. Pure: the
 * operator's bound (maxIntegrationRate in --limits-file) is passed in.
 *
 * perSecond 0 is unlimited (one's own receivers); otherwise from MIN_PER_SECOND (one a minute and a bit) to
 * MAX_PER_SECOND, fractions allowed (Discord's default is 0.5). burst: whole sends, 1 to MAX_BURST; left out, one
 * second's worth (at least 1). A service with a bound refuses a rate above it, and unlimited, naming the flag.
 */
import type { RateLimit } from '../integrations/types.js';
import { badInput } from '../model/errors.js';

const MIN_PER_SECOND = 0.01;
const MAX_PER_SECOND = 10_000;
const MAX_BURST = 1_000;

/**
 * `v` at `field` (e.g. input.rateLimit): undefined when left out (create: the type's default; update: unchanged),
 * null for the type's default, else the limit. `maxPerSecond`: the operator's bound, 0 or absent for none.
 */
export function parseRateLimit(field: string, v: unknown, maxPerSecond = 0): RateLimit | null | undefined {
  if (v === undefined) return undefined;
  if (v === null) return null;
  if (typeof v !== 'object' || Array.isArray(v)) throw badInput(field, `${field} must be an object { perSecond, burst }`);
  const { perSecond, burst } = v as { perSecond?: unknown; burst?: unknown };
  const ps = `${field}.perSecond`;
  if (typeof perSecond !== 'number' || !Number.isFinite(perSecond)) throw badInput(ps, `${ps} must be a number (0 for unlimited)`);
  const bound = maxPerSecond > 0 ? ` (the operator's maxIntegrationRate in --limits-file)` : '';
  if (perSecond === 0) {
    if (maxPerSecond > 0)
      throw badInput(
        ps,
        `${ps} 0 (unlimited) is not allowed by this service: it bounds an integration's rate at ${maxPerSecond} per second${bound}`,
      );
    return { ratePerSec: 0, burst: 1 };
  }
  if (perSecond < MIN_PER_SECOND || perSecond > MAX_PER_SECOND)
    throw badInput(ps, `${ps} must be 0 (unlimited) or from ${MIN_PER_SECOND} to ${MAX_PER_SECOND}, got ${perSecond}`);
  if (maxPerSecond > 0 && perSecond > maxPerSecond)
    throw badInput(ps, `${ps} ${perSecond} is above this service's bound of ${maxPerSecond} per second${bound}`);
  const b = `${field}.burst`;
  if (burst === undefined || burst === null) return { ratePerSec: perSecond, burst: Math.max(1, Math.ceil(perSecond)) };
  if (typeof burst !== 'number' || !Number.isInteger(burst) || burst < 1 || burst > MAX_BURST)
    throw badInput(b, `${b} must be a whole number from 1 to ${MAX_BURST}`);
  return { ratePerSec: perSecond, burst };
}

/** What the API returns: the limit that applies (the integration's own, else its type's) and which one it is. */
export function rateLimitView(
  own: RateLimit | null | undefined,
  typeDefault: RateLimit,
): { perSecond: number; burst: number; typeDefault: boolean } {
  const l = own ?? typeDefault;
  return { perSecond: l.ratePerSec, burst: l.burst, typeDefault: !own };
}
