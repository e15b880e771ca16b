import { randomUUID } from 'node:crypto';
import type { Store } from '../store/types.js';

/** What every service operation needs; built once per request with the caller's company. */
export interface ServiceContext {
  store: Store;
  companyId: string;
  now: () => number;
  newId: () => string;
  /** Called after a committed change to routers or integrations (routing index invalidation). */
  onChange?: (what: 'integrations' | 'routers' | 'monitoring') => void;
}

export function serviceContext(store: Store, companyId: string, extra: Partial<ServiceContext> = {}): ServiceContext {
  return { store, companyId, now: Date.now, newId: randomUUID, ...extra };
}
