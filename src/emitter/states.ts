/** The emitter's two state stores (ConfigMaps in its own namespace); see state.ts. */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { decodeExpiryState, type ExpiryState } from './expiry/due.js';
import { decodeHealthState, type HealthState } from './health/diff.js';
import { ConfigMapState } from './state.js';

export const DEFAULT_STATE_NAME = 'certmgr-notify-emitter';
const EXPIRY_STATE_SHARDS = 4;

/** `<name>-health` (open episodes whose `.notready` was sent) and `<name>-expiry-0..3` (marks per certificate). */
export function emitterStates(o: { core: CoreV1Api; namespace: string; name: string; log: Logger }): {
  health: ConfigMapState<HealthState>;
  expiry: ConfigMapState<ExpiryState>;
} {
  const common = { core: o.core, namespace: o.namespace, log: o.log };
  return {
    health: new ConfigMapState<HealthState>({ ...common, name: `${o.name}-health`, persist: (s) => s.notified, decode: decodeHealthState }),
    // sharded: a ConfigMap holds at most 1 MiB, and a cluster can have many TLS Secrets
    expiry: new ConfigMapState<ExpiryState>({
      ...common,
      name: `${o.name}-expiry`,
      shards: EXPIRY_STATE_SHARDS,
      persist: (s) => s.marks.length > 0,
      decode: decodeExpiryState,
    }),
  };
}
