/**
 * The event view: what a notification says about an event, read from the internal event's loosely typed data
 * (Record<string, unknown>) into one normalized shape for every consumer (ordering, grouping, reminders, the
 * console, every integration's texts). Pure; reads defensively and never throws on a missing or mistyped field.
 */
import { createHash } from 'node:crypto';
import type { EventType, InternalEvent } from '../events/families.js';
import { ROOT_CAUSE_LIMITS, isRootCauseClass, type RootCauseClass } from '../events/root-cause.js';
import { cutToCodePoints } from '../validation/formats.js';
import { daysLeftOfPhrase } from './days-left.js';

export type EventKind = 'issuer' | 'certificate' | 'agent' | 'certificateExpiration';
export type EventState = 'unhealthy' | 'restored' | 'expiring';

export interface CertificateSubject {
  commonName: string | null;
  organizations: string[];
  organizationalUnits: string[];
  countries: string[];
  provinces: string[];
  localities: string[];
}

export interface HealthView {
  /** agent: the hub's own silent-cluster events (docs/inventory.md "Silent clusters as events") */
  kind: 'issuer' | 'certificate' | 'agent';
  state: 'unhealthy' | 'restored';
  type: EventType;
  cluster: { id: string; name: string };
  resource: { namespace: string; name: string; id: string | null };
  reason: string | null;
  message: string | null;
  statusTransition: string | null;
  unhealthyDuration: string | null;
  /** Certificate events only. */
  certificate: { issuerName: string | null; subject: CertificateSubject | null; dnsNames: string[] } | null;
  /** Agent events only. */
  agent: { version: string | null; lastSeenAt: string | null } | null;
  /** data.runbookUrl (notify.certmgr.io/runbook-url), only when it is an http(s) URL. */
  runbookUrl: string | null;
  /** Certificate `.notready` only: the deepest failure the emitter found below it (docs/emitter.md "Root cause"). */
  rootCause: RootCause | null;
}

/** data.rootCause (one of the documented classes), rootCauseHint, rootCauseMessage and rootCauseResource. */
export interface RootCause {
  class: RootCauseClass;
  hint: string | null;
  message: string | null;
  resource: string | null;
}

/** The event's root cause when data.rootCause is one of the classes; its texts cut to the event schema's limits. */
function rootCauseOf(data: Record<string, unknown>): RootCause | null {
  const cls = data['rootCause'];
  if (!isRootCauseClass(cls)) return null;
  const text = (k: string, max: number) => {
    const v = str(data[k]);
    return v ? cutToCodePoints(v, max) : null;
  };
  return {
    class: cls,
    hint: text('rootCauseHint', ROOT_CAUSE_LIMITS.hint),
    message: text('rootCauseMessage', ROOT_CAUSE_LIMITS.message),
    resource: text('rootCauseResource', ROOT_CAUSE_LIMITS.resource),
  };
}

export interface ExpirationView {
  kind: 'certificateExpiration';
  state: 'expiring';
  type: EventType;
  notificationName: string | null;
  message: string | null;
  applicationIds: string[];
  threshold: number | null;
  ruleId: number | null;
  notificationDate: string | null;
  /** Best-effort certificate identity, see certificateRef(). */
  certificateRef: string;
  /** data.daysUntilExpiry (hub expiry scan), else read from the message; negative once expired. */
  daysUntilExpiry: number | null;
  /** data.notAfter (RFC 3339), else read from the message. */
  notAfter: string | null;
  /** The hub expiry scan's extras; absent on client-sent events. */
  certificateName: string | null;
  namespace: string | null;
  clusterName: string | null;
  dnsNames: string[];
  runbookUrl: string | null;
}

export type EventView = HealthView | ExpirationView;

const str = (v: unknown): string | null => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null);
const int = (v: unknown): number | null =>
  typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : null;
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const obj = (v: unknown): Record<string, unknown> | null =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * Identity of the certificate behind an expiration event. The spec's event has no certificate id
 * field; its `message` states the certificate name and id. In order of preference:
 * data.certificateId; the first UUID in `message` that is not one of `applicationIds`;
 * data.certificateName; the notification `name`; finally a hash of `message`.
 */
export function certificateRef(data: Record<string, unknown>): string {
  const explicit = str(data['certificateId']);
  if (explicit) return explicit;
  const apps = new Set(strings(data['applicationIds']).map((a) => a.toLowerCase()));
  const message = str(data['message']) ?? '';
  const fromMessage = (message.match(UUID) ?? []).find((u) => !apps.has(u.toLowerCase()));
  if (fromMessage) return fromMessage.toLowerCase();
  const name = str(data['certificateName']) ?? str(data['name']);
  if (name) return `name:${name}`;
  return `message:${createHash('sha256').update(message).digest('hex').slice(0, 32)}`;
}

/** Longest runbook URL kept (the event schema's limit). */
const MAX_RUNBOOK_URL = 2048;

/**
 * data.runbookUrl when it is an absolute http(s) URL of at most 2048 characters, normalized (percent-encoded) so it
 * can be put in a link of any channel's markup; anything else (javascript:, relative, garbage) is dropped.
 */
export function runbookUrlOf(data: Record<string, unknown>): string | null {
  const raw = data['runbookUrl'];
  // whitespace or control characters: not a URL anyone meant (and the URL parser would silently drop some)
  if (typeof raw !== 'string' || raw.length > MAX_RUNBOOK_URL || [...raw].some((c) => c <= ' ' || c === '\x7f')) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  return u.href.length <= MAX_RUNBOOK_URL ? u.href : null;
}

const ISO_TIME = '\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?(?:Z|[+-]\\d{2}:\\d{2})';
const NOT_AFTER_IN_TEXT = new RegExp(`(?:valid until|not after|expires in \\d+ days? on|expired on|expires on)\\s+(${ISO_TIME})`, 'i');

/**
 * Days until expiry of an expiration event: data.daysUntilExpiry (the hub's scan sets it), else what the message
 * says (the hub's "N days until expiration", else a client's "expires in N days" / "expired N days ago", read by
 * src/model/days-left.ts's rule).
 */
function daysUntilExpiryOf(d: Record<string, unknown>, message: string | null): number | null {
  const given = int(d['daysUntilExpiry']);
  if (given !== null) return given;
  if (!message) return null;
  const until = /(-?\d{1,6}) days? until expiration/i.exec(message);
  return until ? Number(until[1]) : daysLeftOfPhrase(message);
}

function notAfterOf(d: Record<string, unknown>, message: string | null): string | null {
  const given = str(d['notAfter']);
  if (given && !Number.isNaN(Date.parse(given))) return given;
  const m = message ? NOT_AFTER_IN_TEXT.exec(message) : null;
  return m?.[1] && !Number.isNaN(Date.parse(m[1])) ? m[1] : null;
}

export function viewOf(event: InternalEvent): EventView {
  const d = event.data ?? {};
  if (event.type === 'evt.policy.expiringcertificates.failed') {
    const message = str(d['message']);
    return {
      kind: 'certificateExpiration',
      state: 'expiring',
      type: event.type,
      notificationName: str(d['name']),
      message: str(d['message']),
      applicationIds: strings(d['applicationIds']),
      threshold: int(d['threshold']),
      ruleId: int(d['ruleId']),
      notificationDate: str(d['notificationDate']),
      certificateRef: certificateRef(d),
      daysUntilExpiry: daysUntilExpiryOf(d, message),
      notAfter: notAfterOf(d, message),
      certificateName: str(d['certificateName']),
      namespace: str(d['namespace']),
      clusterName: str(d['clusterName']),
      dnsNames: strings(d['dnsNames']),
      runbookUrl: runbookUrlOf(d),
    };
  }
  const isCert = event.type.startsWith('evt.healthstatus.certmgr-certificate-resource.');
  const isAgent = event.type.startsWith('evt.healthstatus.certmgr-agent.');
  const subj = obj(d['subject']);
  const sans = obj(d['SANs']);
  return {
    kind: isCert ? 'certificate' : isAgent ? 'agent' : 'issuer',
    state: event.type.endsWith('.active') ? 'restored' : 'unhealthy',
    type: event.type,
    cluster: { id: str(d['clusterId']) ?? '', name: str(d['clusterName']) ?? '' },
    // an agent event is about the cluster itself: no resource inside it
    resource: isAgent
      ? { namespace: '', name: '', id: null }
      : {
          namespace: str(d['namespace']) ?? '',
          name: (isCert ? str(d['certificateName']) : str(d['issuerName'])) ?? '',
          id: str(d['resourceId']),
        },
    reason: str(d['statusReason']),
    message: str(d['statusMessage']),
    statusTransition: str(d['statusTransition']),
    unhealthyDuration: str(d['unhealthyDuration']),
    certificate: isCert
      ? {
          issuerName: str(d['issuerName']),
          subject: subj
            ? {
                commonName: str(subj['commonName']),
                organizations: strings(subj['organizations']),
                organizationalUnits: strings(subj['organizationalUnits']),
                countries: strings(subj['countries']),
                provinces: strings(subj['provinces']),
                localities: strings(subj['localities']),
              }
            : null,
          dnsNames: sans ? strings(sans['DNS Names']) : [],
        }
      : null,
    agent: isAgent ? { version: str(d['agentVersion']), lastSeenAt: str(d['lastSeenAt']) } : null,
    runbookUrl: runbookUrlOf(d),
    rootCause: isCert ? rootCauseOf(d) : null,
  };
}
