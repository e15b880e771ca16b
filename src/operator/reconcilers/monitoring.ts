/** MonitoringConfig `default` → the service's CERTIFICATE_EXPIRATION monitoring configuration (REST). */
import type { Logger } from 'pino';
import { validateMonitoringSpec } from '../../api/index.js';
import { Reason } from '../../api/meta.js';
import { MONITORING_CONFIG_NAME, MonitoringConfigKind, type MonitoringConfig } from '../../api/monitoringconfig.js';
import { resourceOf } from '../../kube/client.js';
import type { ResilientInformer } from '../../kube/informer.js';
import { SERVICE_DEFAULT_MONITORING, desiredMonitoring, monitoringDrift } from '../desired.js';
import { throwServiceFailure } from '../errors.js';
import { TerminalError, type Applied, type Cleaned, type ResourceHandler } from '../../runtime/controller.js';
import type { MonitoringConfigView } from '../../client/monitoring.js';
import type { ServiceApi } from '../../client/service-api.js';

export interface MonitoringHandlerDeps {
  service: ServiceApi;
  configs: ResilientInformer<MonitoringConfig>;
}

export function monitoringHandler(deps: MonitoringHandlerDeps): ResourceHandler<MonitoringConfig> {
  const { service } = deps;
  return {
    kind: MonitoringConfigKind,
    resource: resourceOf(MonitoringConfigKind),
    cache: deps.configs,
    needsFinalizer: (m) => m.metadata?.name === MONITORING_CONFIG_NAME,

    async apply(m: MonitoringConfig, log: Logger): Promise<Applied> {
      if (m.metadata?.name !== MONITORING_CONFIG_NAME) {
        throw new TerminalError(
          Reason.Ignored,
          `only the MonitoringConfig named '${MONITORING_CONFIG_NAME}' is applied; this one is ignored`,
        );
      }
      const v = validateMonitoringSpec(m.spec);
      if (!v.ok) throw new TerminalError(Reason.InvalidSpec, v.errors.join('; '));
      const desired = desiredMonitoring(v.value);
      let cur: MonitoringConfigView;
      try {
        cur = await service.getMonitoringConfig();
        const drift = monitoringDrift(desired, cur);
        if (drift.length) {
          cur = await service.putMonitoringConfig(desired);
          log.info({ drift }, 'monitoring configuration updated');
        }
      } catch (e) {
        throwServiceFailure(e, 'monitoring');
      }
      return {
        message: `monitoring configuration applied (${desired.enabled ? 'enabled' : 'disabled'}, thresholds ${desired.thresholds.join('/') || 'none'})`,
        fields: { configId: cur.id, rules: cur.rules },
      };
    },

    async cleanup(_m: MonitoringConfig, log: Logger): Promise<Cleaned> {
      try {
        const cur = await service.getMonitoringConfig();
        if (monitoringDrift(SERVICE_DEFAULT_MONITORING, cur).length) {
          await service.putMonitoringConfig(SERVICE_DEFAULT_MONITORING);
          log.info('monitoring configuration reset to the service defaults');
        }
      } catch (e) {
        throwServiceFailure(e, 'monitoring');
      }
      return { done: true };
    },
  };
}
