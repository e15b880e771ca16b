/**
 * The hub's decision on one inventory report (docs/inventory.md#protocol). Pure: the cluster's stored position
 * and the report in, what to do out. The HTTP shell applies an `apply` in one transaction together with the new
 * position, so a report is applied exactly once whatever the agent retries.
 */
import type { InventoryReport } from '../model/inventory.js';
import type { ClusterRecord } from '../store/types.js';

export type ClusterPosition = Pick<ClusterRecord, 'epoch' | 'lastSeq' | 'snapshotComplete'>;

export type ReportDecision =
  /** write the report; `removeStale`: then delete the cluster's rows of other epochs (the full sync is complete) */
  | { action: 'apply'; newEpoch: boolean; snapshotComplete: boolean; removeStale: boolean }
  /** already applied (a retry or a replay): answer 200, write nothing */
  | { action: 'duplicate' }
  /** the hub cannot place the report: 409 RESYNC_REQUIRED, write nothing; the agent starts a new epoch */
  | { action: 'resync'; reason: string };

export function decideReport(
  state: ClusterPosition | null,
  report: Pick<InventoryReport, 'epoch' | 'seq' | 'kind' | 'final'>,
): ReportDecision {
  const final = report.kind === 'snapshot' && report.final === true;
  if (state === null || state.epoch !== report.epoch) {
    // only the first report of a full sync can start an epoch
    if (report.kind === 'snapshot' && report.seq === 1)
      return { action: 'apply', newEpoch: true, snapshotComplete: final, removeStale: final };
    return {
      action: 'resync',
      reason:
        state === null
          ? `the hub holds no inventory of this cluster: start a new epoch with a snapshot report of seq 1`
          : `epoch ${report.epoch} is not the cluster's current epoch: start a new epoch with a snapshot report of seq 1`,
    };
  }
  if (report.seq <= state.lastSeq) return { action: 'duplicate' };
  if (report.seq > state.lastSeq + 1)
    return {
      action: 'resync',
      reason: `seq ${report.seq} does not follow the last applied seq ${state.lastSeq} of this epoch (reports are missing)`,
    };
  if (report.kind === 'snapshot' && state.snapshotComplete)
    return { action: 'resync', reason: `a snapshot report after the epoch's final snapshot report: start a new epoch for a new full sync` };
  if (report.kind === 'delta' && !state.snapshotComplete)
    return { action: 'resync', reason: `a delta report before the epoch's final snapshot report` };
  return { action: 'apply', newEpoch: false, snapshotComplete: state.snapshotComplete || final, removeStale: final };
}
