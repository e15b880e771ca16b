/**
 * Pure status computation (kstatus): one outcome of a reconcile → the next `.status`.
 *  - ready:   Ready=True;                     observedGeneration = generation
 *  - stalled: Ready=False, Stalled=True;      observedGeneration = generation (terminal until the spec changes)
 *  - waiting: Ready=False, Reconciling=True;  observedGeneration kept (retried / waiting on something)
 * lastTransitionTime changes only when a condition's status flips.
 */
import { ConditionType, Reason, type Condition } from '../api/meta.js';

export type Outcome =
  | { kind: 'ready'; message: string; fields?: StatusFields | undefined }
  | { kind: 'stalled'; reason: string; message: string; fields?: StatusFields | undefined }
  | { kind: 'waiting'; reason: string; message: string; fields?: StatusFields | undefined };

/** Kind-specific status fields; `undefined` removes a field. */
export type StatusFields = Record<string, unknown>;

export interface BaseStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  [field: string]: unknown;
}

export function findCondition(conds: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conds?.find((c) => c.type === type);
}

/** Sets `c` in `conds`, keeping lastTransitionTime when the status did not change. */
export function setCondition(conds: readonly Condition[] | undefined, c: Omit<Condition, 'lastTransitionTime'>, now: string): Condition[] {
  const prev = findCondition(conds, c.type);
  const next: Condition = {
    type: c.type,
    status: c.status,
    lastTransitionTime: prev && prev.status === c.status ? prev.lastTransitionTime : now,
    reason: c.reason,
    message: c.message,
  };
  // the schema's type (api/meta.ts) has no undefined: a key only with a value
  if (c.observedGeneration !== undefined) next.observedGeneration = c.observedGeneration;
  return [...(conds ?? []).filter((x) => x.type !== c.type), next];
}

const ORDER: readonly string[] = [ConditionType.Ready, ConditionType.Reconciling, ConditionType.Stalled];

export function nextStatus(prev: BaseStatus | undefined, generation: number, outcome: Outcome, now: string): BaseStatus {
  const prevConds = prev?.conditions ?? [];
  let conds: Condition[] = [];
  const set = (type: string, status: 'True' | 'False', reason: string, msg: string): void => {
    // never an empty string: v1.20's server-side apply turns "" into null, which the schema rejects
    const message = msg || reason;
    conds = setCondition(
      prevConds.filter((c) => c.type === type),
      { type, status, reason, message, observedGeneration: generation },
      now,
    ).concat(conds);
  };
  let observedGeneration = prev?.observedGeneration;
  switch (outcome.kind) {
    case 'ready':
      set(ConditionType.Ready, 'True', Reason.Reconciled, outcome.message);
      observedGeneration = generation;
      break;
    case 'stalled':
      set(ConditionType.Ready, 'False', outcome.reason, outcome.message);
      set(ConditionType.Stalled, 'True', outcome.reason, outcome.message);
      observedGeneration = generation;
      break;
    case 'waiting':
      set(ConditionType.Ready, 'False', outcome.reason, outcome.message);
      set(ConditionType.Reconciling, 'True', outcome.reason, outcome.message);
      break;
  }
  conds.sort((a, b) => ORDER.indexOf(a.type) - ORDER.indexOf(b.type));
  const out: BaseStatus = {};
  for (const [k, v] of Object.entries(prev ?? {})) if (k !== 'conditions' && k !== 'observedGeneration') out[k] = v;
  for (const [k, v] of Object.entries(outcome.fields ?? {})) {
    if (v === undefined || v === '') delete out[k];
    else out[k] = v;
  }
  if (observedGeneration !== undefined) out.observedGeneration = observedGeneration;
  out.conditions = conds;
  return out;
}

/** Deep equality that ignores key order (the server may reorder keys). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => deepEqual(x, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => deepEqual(ao[k], bo[k]));
}

export interface Transition {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** The Event to record when the Ready condition's status or reason changed, else undefined. */
export function readyTransition(prev: BaseStatus | undefined, next: BaseStatus): Transition | undefined {
  const a = findCondition(prev?.conditions, ConditionType.Ready);
  const b = findCondition(next.conditions, ConditionType.Ready);
  if (!b) return undefined;
  if (a && a.status === b.status && a.reason === b.reason) return undefined;
  return { type: b.status === 'True' ? 'Normal' : 'Warning', reason: b.reason, message: b.message };
}

/** Whether the object is terminally stalled for its current generation (nothing to do until the spec changes). */
export function isStalledAt(status: BaseStatus | undefined, generation: number): boolean {
  const s = findCondition(status?.conditions, ConditionType.Stalled);
  return s?.status === 'True' && status?.observedGeneration === generation;
}
