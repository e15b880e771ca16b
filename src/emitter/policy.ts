/**
 * Per-resource policy, pure (docs/annotations.md): what the `notify.certmgr.io/*` annotations of a cert-manager
 * resource (and, for a Certificate, of its Secret) ask for. The Secret's annotation wins, then the Certificate's,
 * then the Certificate's spec.secretTemplate (cert-manager copies that to the Secret anyway), per annotation,
 * like `notify.certmgr.io/application-ids`. A value that does not parse is ignored with a problem (the caller
 * logs it and records a Kubernetes Event) and the default applies: never an error that stops the resource.
 */
import { MAX_SHARE_PERCENT, MIN_SHARE_PERCENT, sortThresholds, type ExpiryThreshold } from '../model/expiry-thresholds.js';
import { MAX_THRESHOLD_DAYS, MAX_THRESHOLDS } from '../model/monitoring.js';
import { runbookUrlProblem } from '../validation/formats.js';

export const IGNORE_ANNOTATION = 'notify.certmgr.io/ignore';
export const EXPIRY_THRESHOLDS_ANNOTATION = 'notify.certmgr.io/expiry-thresholds';
export const RUNBOOK_URL_ANNOTATION = 'notify.certmgr.io/runbook-url';
/** The annotations this module reads (the TLS Secret informer keeps these, with the inventory's two). */
export const POLICY_ANNOTATIONS = [IGNORE_ANNOTATION, EXPIRY_THRESHOLDS_ANNOTATION, RUNBOOK_URL_ANNOTATION] as const;

/** A bad annotation value is cut to this many characters in the problem's text (it may be anything). */
const MAX_SHOWN = 64;

export interface ResourcePolicy {
  /** `notify.certmgr.io/ignore: "true"`: no health or expiry events */
  ignore: boolean;
  /** the certificate's own expiry thresholds, days or shares of the lifetime: distinct, sorted, 1 to 3 of them */
  expiryThresholds?: ExpiryThreshold[];
  runbookUrl?: string;
  /** annotations that were present but ignored, one sentence each (for a warning and a Kubernetes Event) */
  problems: string[];
}

type Annotations = Readonly<Record<string, string>> | undefined;

/** The annotated object, as far as policy goes: its annotations and (Certificates) its Secret template's. */
export interface Annotated {
  metadata?: { annotations?: Annotations };
  spec?: { secretTemplate?: { annotations?: Annotations } } | undefined;
}

const shown = (v: string): string => JSON.stringify(v.length > MAX_SHOWN ? `${v.slice(0, MAX_SHOWN)}…` : v);

/** `"true"` (any case, spaces around) ignores; `"false"` and absence do not; anything else is a problem. */
export function parseIgnore(v: string): { ignore: boolean; problem?: string } {
  const t = v.trim().toLowerCase();
  if (t === 'true') return { ignore: true };
  if (t === 'false' || t === '') return { ignore: false };
  return { ignore: false, problem: `${IGNORE_ANNOTATION}: ${shown(v)} is neither "true" nor "false"; the resource is not ignored` };
}

/**
 * `"7,3,1"` → [7, 3, 1], `"14,33%,10%"` → [14, "33%", "10%"]: comma (or space) separated entries, each whole days
 * 1 to MAX_THRESHOLD_DAYS or a whole percent 1% to 99% of the certificate's lifetime, at most MAX_THRESHOLDS of
 * them, none repeated, at most 64 characters in all. Sorted (days from the largest down, then shares from the
 * largest down) so that the order written does not change the rule ids (docs/expiry.md "Rule ids"). Anything
 * else: undefined with the problem, naming the bad entry.
 */
export function parseExpiryThresholds(v: string): { thresholds?: ExpiryThreshold[]; problem?: string } {
  const bad = (why: string) => ({
    problem: `${EXPIRY_THRESHOLDS_ANNOTATION}: ${shown(v)} ${why}; the monitoring configuration's thresholds apply`,
  });
  if (v.length > 64) return bad('is too long');
  const parts = v.split(/[,\s]+/).filter(Boolean);
  if (!parts.length) return bad('names no threshold');
  const seen = new Set<ExpiryThreshold>();
  for (const p of parts) {
    let t: ExpiryThreshold;
    if (/^[0-9]{1,4}$/.test(p)) {
      const n = Number(p);
      if (n < 1 || n > MAX_THRESHOLD_DAYS) return bad(`has ${n}: thresholds are 1 to ${MAX_THRESHOLD_DAYS} days`);
      t = n;
    } else if (/^[0-9]{1,4}%$/.test(p)) {
      const n = Number(p.slice(0, -1));
      if (n < MIN_SHARE_PERCENT || n > MAX_SHARE_PERCENT)
        return bad(`has ${shown(p)}: a share of the lifetime is ${MIN_SHARE_PERCENT}% to ${MAX_SHARE_PERCENT}%`);
      t = `${n}%`;
    } else if (/^[0-9]*\.[0-9]*%$/.test(p)) return bad(`has ${shown(p)}, which is not a whole percent`);
    else if (p.endsWith('%')) return bad(`has ${shown(p)}, which is not a whole percent of the lifetime`);
    else return bad(`has ${shown(p)}, which is not a whole number of days`);
    if (seen.has(t)) return bad(`has ${typeof t === 'number' ? t : shown(t)} twice`);
    seen.add(t);
  }
  if (seen.size > MAX_THRESHOLDS) return bad(`has ${seen.size} thresholds: at most ${MAX_THRESHOLDS} are allowed`);
  return { thresholds: sortThresholds([...seen]) };
}

export function parseRunbookUrl(v: string): { runbookUrl?: string; problem?: string } {
  const url = v.trim();
  const p = runbookUrlProblem(url);
  if (p) return { problem: `${RUNBOOK_URL_ANNOTATION}: the value ${p}; no runbook link is sent` };
  return { runbookUrl: url };
}

/** The Secret's value, else the resource's, else its spec.secretTemplate's. */
function pick(key: string, secret: Annotations, resource: Annotated | undefined): string | undefined {
  return secret?.[key] ?? resource?.metadata?.annotations?.[key] ?? resource?.spec?.secretTemplate?.annotations?.[key];
}

/**
 * The policy of a resource: a Certificate with its Secret's annotations (undefined when the Secret is unknown),
 * or an Issuer / ClusterIssuer alone (its expiry-thresholds annotation means nothing and is not read).
 */
export function resourcePolicyOf(resource: Annotated | undefined, secretAnnotations?: Annotations, kind = 'Certificate'): ResourcePolicy {
  const out: ResourcePolicy = { ignore: false, problems: [] };
  const ig = pick(IGNORE_ANNOTATION, secretAnnotations, resource);
  if (ig !== undefined) {
    const r = parseIgnore(ig);
    out.ignore = r.ignore;
    if (r.problem) out.problems.push(r.problem);
  }
  const th = kind === 'Certificate' ? pick(EXPIRY_THRESHOLDS_ANNOTATION, secretAnnotations, resource) : undefined;
  if (th !== undefined) {
    const r = parseExpiryThresholds(th);
    if (r.thresholds) out.expiryThresholds = r.thresholds;
    if (r.problem) out.problems.push(r.problem);
  }
  const rb = pick(RUNBOOK_URL_ANNOTATION, secretAnnotations, resource);
  if (rb !== undefined) {
    const r = parseRunbookUrl(rb);
    if (r.runbookUrl) out.runbookUrl = r.runbookUrl;
    if (r.problem) out.problems.push(r.problem);
  }
  return out;
}
