/**
 * What both engines share: the Store surface over createOps/runMigrations. An engine supplies a
 * SqlDb for single statements outside a transaction and a way to run a function in a transaction.
 */
import { TxGuard } from './concurrency.js';
import { reencryptSecretsBatch } from './config-repo.js';
import { runMigrations } from './migrations.js';
import { createQueueOps } from './outbox-queue.js';
import { createOps } from './repo.js';
import type { SecretBox } from './secret-box.js';
import type { Dialect, SqlDb } from './sqldb.js';
import type { DeliveryQueueOps, ReencryptReport, Store, StoreOps } from './types.js';

export abstract class SqlStore implements Store {
  abstract readonly dialect: Dialect;
  protected readonly guard = new TxGuard();
  #ops: StoreOps | undefined;
  #queue: DeliveryQueueOps | undefined;
  /**
   * Seals integration secrets at rest (openStore's `secretBox`). Undefined: secrets are written as
   * plaintext JSON (stores opened directly by tests); sealed rows then cannot be read.
   */
  secretBox: SecretBox | undefined;

  /** Runs single statements outside any transaction (SQLite: each waits for a running transaction). */
  protected abstract autoDb(): SqlDb;
  /** Runs fn in one transaction, on a SqlDb bound to it; commits on success, rolls back on throw. */
  protected abstract withTransaction<T>(fn: (db: SqlDb) => Promise<T>): Promise<T>;
  abstract ping(): Promise<void>;
  abstract close(): Promise<void>;

  /** The delivery worker's queue statements (a few texts, run very often): by default as any single statement. */
  protected queueDb(): SqlDb {
    return this.autoDb();
  }

  private guardedDb(db: SqlDb = this.autoDb()): SqlDb {
    const guard = this.guard;
    return {
      dialect: db.dialect,
      all: async (sql, params) => (guard.assertOutside('a store operation'), db.all(sql, params)),
      get: async (sql, params) => (guard.assertOutside('a store operation'), db.get(sql, params)),
      run: async (sql, params) => (guard.assertOutside('a store operation'), db.run(sql, params)),
    };
  }

  private get ops(): StoreOps {
    return (this.#ops ??= createOps(this.guardedDb(), () => this.secretBox));
  }

  private get queue(): DeliveryQueueOps {
    return (this.#queue ??= createQueueOps(this.guardedDb(this.queueDb()), { box: () => this.secretBox }));
  }

  async migrate(): Promise<void> {
    this.guard.assertOutside('store.migrate()');
    await this.withTransaction((db) => runMigrations(db));
  }

  async transaction<T>(fn: (tx: StoreOps) => Promise<T>): Promise<T> {
    this.guard.assertOutside('store.transaction()');
    return this.withTransaction((db) => this.guard.run(() => fn(createOps(db, () => this.secretBox))));
  }

  async ingestTransaction<T>(fn: (tx: StoreOps) => Promise<T>, committed: () => void): Promise<T> {
    this.guard.assertOutside('store.ingestTransaction()');
    const result = await this.withIngestTransaction((db) => this.guard.run(() => fn(createOps(db, () => this.secretBox))));
    committed();
    await this.syncIngested();
    return result;
  }

  /** The ingestion transaction's commit (see Store.ingestTransaction): by default as every other one. */
  protected withIngestTransaction<T>(fn: (db: SqlDb) => Promise<T>): Promise<T> {
    return this.withTransaction(fn);
  }

  /** Makes the ingestion commits before it durable (by default they are already). */
  protected async syncIngested(): Promise<void> {}

  async reencryptSecrets(): Promise<ReencryptReport> {
    this.guard.assertOutside('store.reencryptSecrets()');
    const report: ReencryptReport = { checked: 0, reencrypted: 0, failed: 0, errors: [] };
    const box = this.secretBox;
    if (!box) return report;
    // one short transaction per batch: one fsync per batch on SQLite, and other writers get their turn between
    let after: string | null = '';
    while (after !== null) {
      const from: string = after;
      after = await this.withTransaction((db) => reencryptSecretsBatch(db, box, from, report));
    }
    return report;
  }

  getMonitoringConfig: StoreOps['getMonitoringConfig'] = (...a) => this.ops.getMonitoringConfig(...a);
  putMonitoringConfig: StoreOps['putMonitoringConfig'] = (...a) => this.ops.putMonitoringConfig(...a);
  putMonitoringConfigIf: StoreOps['putMonitoringConfigIf'] = (...a) => this.ops.putMonitoringConfigIf(...a);
  listIntegrations: StoreOps['listIntegrations'] = (...a) => this.ops.listIntegrations(...a);
  getIntegration: StoreOps['getIntegration'] = (...a) => this.ops.getIntegration(...a);
  createIntegration: StoreOps['createIntegration'] = (...a) => this.ops.createIntegration(...a);
  updateIntegration: StoreOps['updateIntegration'] = (...a) => this.ops.updateIntegration(...a);
  deleteIntegrations: StoreOps['deleteIntegrations'] = (...a) => this.ops.deleteIntegrations(...a);
  listRouters: StoreOps['listRouters'] = (...a) => this.ops.listRouters(...a);
  routingFingerprint: StoreOps['routingFingerprint'] = (...a) => this.ops.routingFingerprint(...a);
  listRoutersByIntegration: StoreOps['listRoutersByIntegration'] = (...a) => this.ops.listRoutersByIntegration(...a);
  getRouter: StoreOps['getRouter'] = (...a) => this.ops.getRouter(...a);
  createRouter: StoreOps['createRouter'] = (...a) => this.ops.createRouter(...a);
  updateRouter: StoreOps['updateRouter'] = (...a) => this.ops.updateRouter(...a);
  deleteRouters: StoreOps['deleteRouters'] = (...a) => this.ops.deleteRouters(...a);
  existingIds: StoreOps['existingIds'] = (...a) => this.ops.existingIds(...a);
  countForQuota: StoreOps['countForQuota'] = (...a) => this.ops.countForQuota(...a);
  insertEvent: StoreOps['insertEvent'] = (...a) => this.ops.insertEvent(...a);
  insertEvents: StoreOps['insertEvents'] = (...a) => this.ops.insertEvents(...a);
  insertDeliveries: StoreOps['insertDeliveries'] = (...a) => this.ops.insertDeliveries(...a);
  getEvent: StoreOps['getEvent'] = (...a) => this.ops.getEvent(...a);
  listDeliveries: StoreOps['listDeliveries'] = (...a) => this.ops.listDeliveries(...a);
  tryLockExpiry: StoreOps['tryLockExpiry'] = (...a) => this.ops.tryLockExpiry(...a);
  listExpiryInventory: StoreOps['listExpiryInventory'] = (...a) => this.ops.listExpiryInventory(...a);
  maxOwnExpiryThreshold: StoreOps['maxOwnExpiryThreshold'] = (...a) => this.ops.maxOwnExpiryThreshold(...a);
  claimExpiryScan: StoreOps['claimExpiryScan'] = (...a) => this.ops.claimExpiryScan(...a);
  listInventoryCompanies: StoreOps['listInventoryCompanies'] = (...a) => this.ops.listInventoryCompanies(...a);
  getExpiryMarks: StoreOps['getExpiryMarks'] = (...a) => this.ops.getExpiryMarks(...a);
  putExpiryMarks: StoreOps['putExpiryMarks'] = (...a) => this.ops.putExpiryMarks(...a);
  deleteStaleExpiryMarks: StoreOps['deleteStaleExpiryMarks'] = (...a) => this.ops.deleteStaleExpiryMarks(...a);
  listWeakChainRows: StoreOps['listWeakChainRows'] = (...a) => this.ops.listWeakChainRows(...a);
  listOutlivedRoots: StoreOps['listOutlivedRoots'] = (...a) => this.ops.listOutlivedRoots(...a);
  listCertificatesOutliving: StoreOps['listCertificatesOutliving'] = (...a) => this.ops.listCertificatesOutliving(...a);
  getWeakLinkMarks: StoreOps['getWeakLinkMarks'] = (...a) => this.ops.getWeakLinkMarks(...a);
  putWeakLinkMarks: StoreOps['putWeakLinkMarks'] = (...a) => this.ops.putWeakLinkMarks(...a);
  deleteStaleWeakLinkMarks: StoreOps['deleteStaleWeakLinkMarks'] = (...a) => this.ops.deleteStaleWeakLinkMarks(...a);
  lockCluster: StoreOps['lockCluster'] = (...a) => this.ops.lockCluster(...a);
  putCluster: StoreOps['putCluster'] = (...a) => this.ops.putCluster(...a);
  deleteClusters: StoreOps['deleteClusters'] = (...a) => this.ops.deleteClusters(...a);
  listClusters: StoreOps['listClusters'] = (...a) => this.ops.listClusters(...a);
  certificateCountExcept: StoreOps['certificateCountExcept'] = (...a) => this.ops.certificateCountExcept(...a);
  upsertInventory: StoreOps['upsertInventory'] = (...a) => this.ops.upsertInventory(...a);
  deleteInventory: StoreOps['deleteInventory'] = (...a) => this.ops.deleteInventory(...a);
  deleteInventoryOutsideEpoch: StoreOps['deleteInventoryOutsideEpoch'] = (...a) => this.ops.deleteInventoryOutsideEpoch(...a);
  listInventory: StoreOps['listInventory'] = (...a) => this.ops.listInventory(...a);
  listCertificatePlaces: StoreOps['listCertificatePlaces'] = (...a) => this.ops.listCertificatePlaces(...a);
  clusterCounts: StoreOps['clusterCounts'] = (...a) => this.ops.clusterCounts(...a);
  inventoryNotAfterCounts: StoreOps['inventoryNotAfterCounts'] = (...a) => this.ops.inventoryNotAfterCounts(...a);
  clustersToMarkSilent: StoreOps['clustersToMarkSilent'] = (...a) => this.ops.clustersToMarkSilent(...a);
  markClusterSilent: StoreOps['markClusterSilent'] = (...a) => this.ops.markClusterSilent(...a);
  getReminders: StoreOps['getReminders'] = (...a) => this.ops.getReminders(...a);
  putRemindersIfNewer: StoreOps['putRemindersIfNewer'] = (...a) => this.ops.putRemindersIfNewer(...a);
  countOpenReminders: StoreOps['countOpenReminders'] = (...a) => this.ops.countOpenReminders(...a);
  claimDueReminders: StoreOps['claimDueReminders'] = (...a) => this.ops.claimDueReminders(...a);
  dueReminderCompanies: StoreOps['dueReminderCompanies'] = (...a) => this.ops.dueReminderCompanies(...a);
  reminderTargets: StoreOps['reminderTargets'] = (...a) => this.ops.reminderTargets(...a);
  rescheduleReminders: StoreOps['rescheduleReminders'] = (...a) => this.ops.rescheduleReminders(...a);
  deleteReminders: StoreOps['deleteReminders'] = (...a) => this.ops.deleteReminders(...a);
  listTemplates: StoreOps['listTemplates'] = (...a) => this.ops.listTemplates(...a);
  getTemplate: StoreOps['getTemplate'] = (...a) => this.ops.getTemplate(...a);
  createTemplate: StoreOps['createTemplate'] = (...a) => this.ops.createTemplate(...a);
  updateTemplate: StoreOps['updateTemplate'] = (...a) => this.ops.updateTemplate(...a);
  deleteTemplates: StoreOps['deleteTemplates'] = (...a) => this.ops.deleteTemplates(...a);
  listRoutersByTemplate: StoreOps['listRoutersByTemplate'] = (...a) => this.ops.listRoutersByTemplate(...a);
  getRouterTemplate: StoreOps['getRouterTemplate'] = (...a) => this.ops.getRouterTemplate(...a);
  createSilence: StoreOps['createSilence'] = (...a) => this.ops.createSilence(...a);
  getSilence: StoreOps['getSilence'] = (...a) => this.ops.getSilence(...a);
  updateSilence: StoreOps['updateSilence'] = (...a) => this.ops.updateSilence(...a);
  expireSilence: StoreOps['expireSilence'] = (...a) => this.ops.expireSilence(...a);
  listSilences: StoreOps['listSilences'] = (...a) => this.ops.listSilences(...a);
  listLiveSilences: StoreOps['listLiveSilences'] = (...a) => this.ops.listLiveSilences(...a);
  deleteOldestEndedSilences: StoreOps['deleteOldestEndedSilences'] = (...a) => this.ops.deleteOldestEndedSilences(...a);
  previousDelivery: StoreOps['previousDelivery'] = (...a) => this.ops.previousDelivery(...a);
  lockGroups: StoreOps['lockGroups'] = (...a) => this.ops.lockGroups(...a);
  countRouterGroups: StoreOps['countRouterGroups'] = (...a) => this.ops.countRouterGroups(...a);
  existingGroupKeys: StoreOps['existingGroupKeys'] = (...a) => this.ops.existingGroupKeys(...a);
  getGroupMembers: StoreOps['getGroupMembers'] = (...a) => this.ops.getGroupMembers(...a);
  putGroupMembers: StoreOps['putGroupMembers'] = (...a) => this.ops.putGroupMembers(...a);
  saveGroup: StoreOps['saveGroup'] = (...a) => this.ops.saveGroup(...a);
  lockDueGroups: StoreOps['lockDueGroups'] = (...a) => this.ops.lockDueGroups(...a);
  groupMemberCounts: StoreOps['groupMemberCounts'] = (...a) => this.ops.groupMemberCounts(...a);
  listGroupMembers: StoreOps['listGroupMembers'] = (...a) => this.ops.listGroupMembers(...a);
  dropSettledMembers: StoreOps['dropSettledMembers'] = (...a) => this.ops.dropSettledMembers(...a);
  deleteGroup: StoreOps['deleteGroup'] = (...a) => this.ops.deleteGroup(...a);
  countGroups: StoreOps['countGroups'] = (...a) => this.ops.countGroups(...a);
  lockIssuerHolds: StoreOps['lockIssuerHolds'] = (...a) => this.ops.lockIssuerHolds(...a);
  resourceStreaks: StoreOps['resourceStreaks'] = (...a) => this.ops.resourceStreaks(...a);
  listEvents: StoreOps['listEvents'] = (...a) => this.ops.listEvents(...a);
  putResourceHealth: StoreOps['putResourceHealth'] = (...a) => this.ops.putResourceHealth(...a);
  listUnhealthyResources: StoreOps['listUnhealthyResources'] = (...a) => this.ops.listUnhealthyResources(...a);
  listStreakDeliveries: StoreOps['listStreakDeliveries'] = (...a) => this.ops.listStreakDeliveries(...a);
  retryDeadDelivery: StoreOps['retryDeadDelivery'] = (...a) => this.ops.retryDeadDelivery(...a);

  claimDeliveries: DeliveryQueueOps['claimDeliveries'] = (...a) => this.queue.claimDeliveries(...a);
  releaseClaims: DeliveryQueueOps['releaseClaims'] = (...a) => this.queue.releaseClaims(...a);
  markDelivered: DeliveryQueueOps['markDelivered'] = (...a) => this.queue.markDelivered(...a);
  markRetry: DeliveryQueueOps['markRetry'] = (...a) => this.queue.markRetry(...a);
  supersede: DeliveryQueueOps['supersede'] = (...a) => this.queue.supersede(...a);
  markDead: DeliveryQueueOps['markDead'] = (...a) => this.queue.markDead(...a);
  recordOutcomes: DeliveryQueueOps['recordOutcomes'] = (...a) => this.queue.recordOutcomes(...a);
  supersedeMany: DeliveryQueueOps['supersedeMany'] = (...a) => this.queue.supersedeMany(...a);
  deferDelivery: DeliveryQueueOps['deferDelivery'] = (...a) => this.queue.deferDelivery(...a);
  deliveryStats: DeliveryQueueOps['deliveryStats'] = (...a) => this.queue.deliveryStats(...a);
  oldestPendingAge: DeliveryQueueOps['oldestPendingAge'] = (...a) => this.queue.oldestPendingAge(...a);
}
