/**
 * The correlation key: the stable identity of "the thing an event is about" (an issuer, a certificate, a cluster's
 * agent, a certificate under an expiry rule), shared by an unhealthy event and its recovery. It orders deliveries
 * per key, groups and holds events, and opens and closes incidents. Pure.
 */
import { createHash } from 'node:crypto';
import type { EventView } from './event-view.js';

/** Longest correlation key: the Events v2 dedup_key limit. */
const MAX_CORRELATION_KEY = 255;

/**
 * Stable key of "the thing this event is about", shared by an unhealthy event and its restored
 * event. Used as the incident dedup_key and exposed in the webhook payload as correlationKey.
 * - health: certmgr:<issuer|certificate>:<clusterId, else clusterName>:<namespace>:<name>
 * - agent: certmgr:agent:<clusterId, else clusterName>
 * - expiration: certmgr:certificateExpiration:<certificateRef>:rule:<ruleId>
 * Keys longer than 255 characters become certmgr:<kind>:sha256:<hex of the long key>.
 */
export function correlationKeyOf(v: EventView): string {
  const parts =
    v.kind === 'certificateExpiration'
      ? ['certmgr', v.kind, v.certificateRef, 'rule', v.ruleId === null ? 'none' : String(v.ruleId)]
      : v.kind === 'agent'
        ? ['certmgr', v.kind, v.cluster.id || v.cluster.name]
        : ['certmgr', v.kind, v.cluster.id || v.cluster.name, v.resource.namespace, v.resource.name];
  const key = parts.join(':');
  if (key.length <= MAX_CORRELATION_KEY) return key;
  return `certmgr:${v.kind}:sha256:${createHash('sha256').update(key).digest('hex')}`;
}
