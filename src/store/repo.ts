/**
 * The operations of every area over one SqlDb (the store's own statements, or a transaction's), each area's
 * repository written once and shared by both engines. Every statement that reads or changes a company's records
 * filters by company_id.
 */
import { createConfigOps, createQuotaOps } from './config-repo.js';
import { createConsoleOps } from './console-repo.js';
import { createExpiryOps } from './expiry.js';
import { createGroupOps } from './groups.js';
import { createInventoryOps } from './inventory-repo.js';
import { createOutboxOps } from './outbox-repo.js';
import { createReminderOps } from './reminders.js';
import { type SecretBox } from './secret-box.js';
import { createSilenceOps } from './silences.js';
import { type SqlDb } from './sqldb.js';
import { createTemplateOps } from './templates-repo.js';
import type { StoreOps } from './types.js';
import { createWeakLinkOps } from './weak-links.js';

/** `box()`: the key ring sealing integration secrets (undefined: plaintext). */
export function createOps(db: SqlDb, box: () => SecretBox | undefined = () => undefined): StoreOps {
  return {
    ...createConfigOps(db, box),
    ...createQuotaOps(db),
    ...createOutboxOps(db),
    ...createExpiryOps(db),
    ...createWeakLinkOps(db),
    ...createInventoryOps(db),
    ...createReminderOps(db),
    ...createTemplateOps(db),
    ...createSilenceOps(db),
    ...createGroupOps(db),
    ...createConsoleOps(db),
  };
}
