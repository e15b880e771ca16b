/** MonitoringConfig `default` → the service's CERTIFICATE_EXPIRATION monitoring configuration (REST). */
import type { Logger } from 'pino';
import { validateMonitoringSpec } from '../../api/index.js';
import { Reason } from '../../api/meta.js';
import { MONITORING_CONFIG_NAME, MonitoringConfigKind, type MonitoringConfig } from '../../api/monitoringconfig.js';
import { resourceOf } from '../../kube/client.js';
import type { ResilientInformer } from '../../kube/informer.js';
import { SERVICE_DEFAULT_MONITORING, desiredMonitoring, managedByKey, planMonitoring, releaseMonitoring } from '../desired.js';
import { API_MANAGER, describeManager } from '../../model/manager.js';
import { ServiceApiError } from '../../client/errors.js';
import { throwServiceFailure } from '../errors.js';
import { TerminalError, type Applied, type Cleaned, type ResourceHandler } from '../../runtime/controller.js';
import type { MonitoringConfigView } from '../../client/monitoring.js';
import type { ServiceApi } from '../../client/service-api.js';

export interface MonitoringHandlerDeps {
  service: ServiceApi;
  configs: ResilientInformer<MonitoringConfig>;
  /** this cluster's name in the manager key (k8s:MonitoringConfig//default@<cluster>), as for routers */
  cluster?: string | undefined;
}

function managedElsewhere(manager: string, drift: readonly string[]): TerminalError {
  const what = drift.length ? `; differs from this spec in ${drift.join(', ')} (not reverted)` : '';
  return new TerminalError(
    Reason.ManagedElsewhere,
    `the company's monitoring configuration is managed by ${describeManager(manager)}${what}`,
  );
}

export function monitoringHandler(deps: MonitoringHandlerDeps): ResourceHandler<MonitoringConfig> {
  const { service } = deps;
  const me = managedByKey({ kind: MonitoringConfigKind.kind, name: MONITORING_CONFIG_NAME }, deps.cluster);
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
        const plan = planMonitoring(me, desired, cur);
        if (plan.action === 'elsewhere') throw managedElsewhere(plan.manager, plan.drift);
        if (plan.action === 'write') {
          cur = await service.putMonitoringConfig(desired, { manager: me });
          log.info({ drift: plan.drift }, 'monitoring configuration updated');
        }
      } catch (e) {
        // another manager wrote between our read and write: the service refused ours (nothing changed)
        if (e instanceof ServiceApiError && e.kind === 'conflict') throw managedElsewhere(conflictManager(e), []);
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
        // a delete never resets another manager's record (another cluster's, or the API's after a take-over)
        if (releaseMonitoring(me, cur)) {
          await service.putMonitoringConfig(SERVICE_DEFAULT_MONITORING, { manager: me, release: true });
          log.info('monitoring configuration reset to the service defaults');
        } else {
          log.info({ manager: cur.manager ?? null }, 'monitoring configuration left as is: this MonitoringConfig is not its manager');
        }
      } catch (e) {
        if (e instanceof ServiceApiError && e.kind === 'conflict') return { done: true };
        throwServiceFailure(e, 'monitoring');
      }
      return { done: true };
    },
  };
}

/** The manager a CONFLICT names (the service's message: "… managed by <manager>", src/model/manager.ts). */
export function conflictManager(e: ServiceApiError): string {
  const errors = e.details['errors'];
  const msg = Array.isArray(errors) ? String((errors[0] as { message?: unknown } | undefined)?.message ?? '') : '';
  if (msg.includes('managed by the API')) return API_MANAGER;
  return /managed by (k8s:\S+)/.exec(msg)?.[1] ?? 'another manager';
}
