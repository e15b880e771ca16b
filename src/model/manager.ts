/**
 * Who manages the company's monitoring configuration ("Ownership across clusters"). The REST body is
 * fixed by the spec, so the manager travels in a header our operator client sends: `k8s:<kind>/<ns>/<name>@<cluster>`
 * (the operator's managedBy key). A PUT without it is a plain API write and takes the record over.
 */
export const MANAGER_HEADER = 'x-certmgr-notify-manager';
/**
 * `true`: the write leaves the record unmanaged. With the manager header: the manager writes its last value and
 * gives the record up (its CR was deleted). Without: the API hands the record back (the next operator write claims it).
 */
export const RELEASE_HEADER = 'x-certmgr-notify-release';
/** The stored manager of a record last written by a plain API PUT. */
export const API_MANAGER = 'api';
const MAX_MANAGER_CHARS = 512;
// printable ASCII without spaces: it is echoed in a response header and in condition messages
const MANAGER_RE = /^k8s:[\x21-\x7e]+$/;

/** Why a manager header value is refused, or undefined when it is valid. */
export function managerProblem(v: string): string | undefined {
  if (v.length > MAX_MANAGER_CHARS) return `must be at most ${MAX_MANAGER_CHARS} characters`;
  if (!MANAGER_RE.test(v)) return "must read 'k8s:<kind>/<namespace>/<name>@<cluster>' (printable ASCII, no spaces)";
  return undefined;
}

export type MonitoringWrite =
  /** write, and store this manager (null: nobody manages the record any more) */
  | { ok: true; manager: string | null }
  /** refused (CONFLICT): `current` manages the record */
  | { ok: false; current: string };

/**
 * The ownership rule of a monitoring configuration write. `current`: the stored manager (null: none, e.g. never
 * written through the operator); `writer`: the request's manager (undefined: a plain API
 * write). Pure; table-tested in test/model/manager.test.ts.
 */
export function decideMonitoringWrite(current: string | null, writer: string | undefined, release = false): MonitoringWrite {
  // the API (an admin's key) may always take the record over; the operator then reports drift, not reverts
  if (writer === undefined) return { ok: true, manager: release ? null : API_MANAGER };
  if (current !== null && current !== writer) return { ok: false, current };
  return { ok: true, manager: release ? null : writer };
}

/** How a CONFLICT names the current manager. */
export function describeManager(m: string): string {
  return m === API_MANAGER ? 'the API (a PUT without a manager took it over)' : m;
}
