/**
 * Monitoring rules shared by the service (API, routing) and the emitter: the CERTIFICATE_EXPIRATION
 * configuration's defaults and limits, ruleIds, and the pure `isMonitored` decision (spec, combinations table).
 */
import { createHash } from 'node:crypto';
import type { MonitoringConfigRecord } from './records.js';

/** The writable fields of the monitoring configuration (REST PUT body, operator's desired state, emitter's view). */
export interface MonitoringConfigInput {
  enabled: boolean;
  thresholds: number[];
  applicationIds: string[];
  includeUnassignedCertificates: boolean;
}

export const MONITORING_TYPE = 'CERTIFICATE_EXPIRATION';
export const MAX_THRESHOLDS = 3;
export const MAX_THRESHOLD_DAYS = 3650;
export const MAX_APPLICATION_IDS = 1000;
/** Per application id, in characters (code points). */
export const MAX_APPLICATION_ID_CHARS = 256;

/** A stable UUID derived from the company id, so GET returns the same id before and after the first PUT. */
export function monitoringConfigId(companyId: string): string {
  const h = createHash('sha256').update(`monitoring-config:${MONITORING_TYPE}:${companyId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h.slice(16, 18), 16) & 0x3f) | 0x80).toString(16)}${h.slice(18, 20)}-${h.slice(20, 32)}`;
}

export function defaultMonitoringConfig(companyId: string, now = 0): MonitoringConfigRecord {
  return {
    id: monitoringConfigId(companyId),
    companyId,
    enabled: true,
    thresholds: [30, 14, 7],
    applicationIds: [],
    includeUnassignedCertificates: true,
    updatedAt: now,
  };
}

/** Rules: ruleId is the 1-based position of the threshold. Expiration events carry that ruleId. */
export function rulesOf(thresholds: readonly number[]): { ruleId: number; threshold: number }[] {
  return thresholds.map((threshold, i) => ({ ruleId: i + 1, threshold }));
}

/**
 * Rule ids of a certificate's own thresholds (`notify.certmgr.io/expiry-thresholds`, docs/expiry.md "Rule ids"):
 * 1001, 1002, 1003 by position in descending order of days (the annotation is normalized so), so they never
 * collide with the monitoring configuration's 1..MAX_THRESHOLDS, `ruleId > 1000` tells them apart in a filter,
 * and the order the annotation was written in does not matter.
 */
const CERTIFICATE_RULE_ID_BASE = 1000;

export function certificateRulesOf(thresholds: readonly number[]): { ruleId: number; threshold: number }[] {
  return [...new Set(thresholds)].sort((a, b) => b - a).map((threshold, i) => ({ ruleId: CERTIFICATE_RULE_ID_BASE + i + 1, threshold }));
}

/**
 * Pure: whether a certificate assigned to `applicationIds` is monitored (spec, combinations table).
 * An empty list of the certificate's applications means "unassigned".
 */
export function isMonitored(
  cfg: Pick<MonitoringConfigRecord, 'enabled' | 'applicationIds' | 'includeUnassignedCertificates'>,
  certApplicationIds: readonly string[],
): boolean {
  if (!cfg.enabled) return false;
  if (certApplicationIds.length === 0) return cfg.includeUnassignedCertificates;
  if (cfg.applicationIds.length === 0) return true;
  return certApplicationIds.some((a) => cfg.applicationIds.includes(a));
}
