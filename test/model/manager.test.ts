/** The monitoring configuration's ownership rule: decideMonitoringWrite as a table. */
import { describe, expect, it } from 'vitest';
import { API_MANAGER, decideMonitoringWrite, managerProblem } from '../../src/model/manager.js';

const C1 = 'k8s:MonitoringConfig//default@cluster-1';
const C2 = 'k8s:MonitoringConfig//default@cluster-2';

describe('decideMonitoringWrite', () => {
  it.each([
    // current, writer, release, outcome
    [null, C1, false, { ok: true, manager: C1 }], // unmanaged (new or legacy row): the operator claims it
    [C1, C1, false, { ok: true, manager: C1 }], // the manager of record writes
    [C1, C2, false, { ok: false, current: C1 }], // another cluster: refused, names the current manager
    [API_MANAGER, C1, false, { ok: false, current: API_MANAGER }], // taken over by the API: the operator does not revert
    [C1, undefined, false, { ok: true, manager: API_MANAGER }], // a plain API PUT takes the record over
    [null, undefined, false, { ok: true, manager: API_MANAGER }],
    [API_MANAGER, undefined, false, { ok: true, manager: API_MANAGER }],
    [C1, C1, true, { ok: true, manager: null }], // the manager's CR is deleted: reset and give up
    [C1, C2, true, { ok: false, current: C1 }], // a delete never resets another manager's record
    [null, C2, true, { ok: true, manager: null }],
    [API_MANAGER, undefined, true, { ok: true, manager: null }], // the API hands the record back to the operator
  ] as const)('current %s, writer %s, release %s', (current, writer, release, want) => {
    expect(decideMonitoringWrite(current, writer, release)).toEqual(want);
  });
});

describe('managerProblem', () => {
  it.each([
    [C1, undefined],
    ['api', "must read 'k8s:<kind>/<namespace>/<name>@<cluster>' (printable ASCII, no spaces)"],
    ['k8s:a b', "must read 'k8s:<kind>/<namespace>/<name>@<cluster>' (printable ASCII, no spaces)"],
    ['k8s:' + 'x'.repeat(600), 'must be at most 512 characters'],
  ])('%s', (v, want) => expect(managerProblem(v)).toBe(want));
});
