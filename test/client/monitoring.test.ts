/** The monitoring configuration over REST: the emitter's strict parse and cached source, the operator's get/put. */
import { describe, expect, it } from 'vitest';
import { parseMonitoringConfig } from '../../src/client/monitoring.js';

describe('monitoring configuration response', () => {
  it('reads the GET body', () => {
    expect(
      parseMonitoringConfig({
        id: 'x',
        companyId: 'y',
        configuration: {
          inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION',
          enabled: true,
          thresholds: [30, 7],
          applicationIds: ['a'],
          includeUnassignedCertificates: false,
          rules: [],
        },
      }),
    ).toEqual({ enabled: true, thresholds: [30, 7], applicationIds: ['a'], includeUnassignedCertificates: false });
    expect(() => parseMonitoringConfig({ configuration: { enabled: 'yes' } })).toThrow(/missing/);
  });
});
