/** `svc-api-key` authentication: each key belongs to one company. Constant-time comparison over all keys. */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ApiKeyEntry } from '../config.js';

export const API_KEY_HEADER = 'svc-api-key';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export class ApiKeyRing {
  private readonly entries: { hash: Buffer; companyId: string }[];
  constructor(keys: ApiKeyEntry[]) {
    this.entries = keys.map((k) => ({ hash: digest(k.key), companyId: k.companyId }));
  }
  get size(): number {
    return this.entries.length;
  }
  /** Returns the company of the key, or null. Every entry is compared, so timing does not reveal which matched. */
  companyOf(key: string | undefined): string | null {
    if (typeof key !== 'string' || key === '') return null;
    const h = digest(key);
    let found: string | null = null;
    for (const e of this.entries) if (timingSafeEqual(e.hash, h) && found === null) found = e.companyId;
    return found;
  }
}
