/**
 * Days left until a certificate's notAfter: the one rule behind every `daysUntilExpiry` (inventory, GraphQL, CSV,
 * console, metrics, expiration events, their messages and templates).
 */

export const DAY_MS = 86_400_000;

/**
 * Whole days remaining, rounded down: floor((notAfter − now) / 24 h). 0 means less than 24 h left (not expired
 * yet); negative means expired (−1: within the last 24 h). 9 days 23 h left is 9.
 */
export function daysUntilExpiry(notAfter: number, now: number): number {
  return Math.floor((notAfter - now) / DAY_MS);
}

/** The latest notAfter (epoch ms) whose daysUntilExpiry at `now` is at most `days`: a bound for store queries. */
export function latestNotAfterWithin(days: number, now: number): number {
  return now + (days + 1) * DAY_MS - 1;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * The words for a daysUntilExpiry: `expires in 9 days`, `expires in less than a day` (0), `expired less than a day
 * ago` (−1), `expired 2 days ago` (−3: whole days since notAfter). daysLeftOfPhrase reads them back.
 */
export function daysLeftPhrase(days: number): string {
  if (days > 0) return `expires in ${plural(days, 'day')}`;
  if (days === 0) return 'expires in less than a day';
  return days === -1 ? 'expired less than a day ago' : `expired ${plural(-days - 1, 'day')} ago`;
}

/**
 * The daysUntilExpiry a text states in daysLeftPhrase's words (also `expires today`, 0), or null: how an expiration
 * event posted by a client without daysUntilExpiry is read.
 */
export function daysLeftOfPhrase(text: string): number | null {
  const inDays = /expires in (\d{1,6}) days?/i.exec(text);
  if (inDays) return Number(inDays[1]);
  if (/expires in less than a day|expires today/i.test(text)) return 0;
  if (/expired less than a day ago/i.test(text)) return -1;
  const ago = /expired (\d{1,6}) days? ago/i.exec(text);
  return ago ? -Number(ago[1]) - 1 : null;
}
