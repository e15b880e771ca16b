/** NotificationProvider → an integration in the service. */
import type { Logger } from 'pino';
import { validateProviderSpec } from '../../api/index.js';
import { Reason } from '../../api/meta.js';
import { NotificationProviderKind, type NotificationProvider } from '../../api/notificationprovider.js';
import { resourceOf } from '../../kube/client.js';
import type { ResilientInformer } from '../../kube/informer.js';
import { describeKubeError } from '../../kube/errors.js';
import {
  desiredIntegration,
  managedByKey,
  missingSettings,
  pickOwned,
  planIntegrationUpdate,
  resolveSecrets,
  secretRefsOf,
  type SecretObject,
  type SecretUse,
} from '../desired.js';
import { throwServiceFailure } from '../errors.js';
import { TerminalError, WaitError, objectKey, type Applied, type Cleaned, type ResourceHandler } from '../../runtime/controller.js';
import { ServiceApiError } from '../../client/errors.js';
import type { ServiceApi } from '../../client/service-api.js';

export interface ProviderHandlerDeps {
  service: ServiceApi;
  providers: ResilientInformer<NotificationProvider>;
  /**
   * GET of a Secret (undefined: not found). Read per reconcile, not cached: the operator caches only Secrets'
   * names (src/operator/secrets.ts), so no Secret value outlives the reconcile that applies it.
   */
  readSecret: (namespace: string, name: string) => Promise<SecretObject | undefined>;
  /** suffix of managedBy when several clusters share one service */
  cluster?: string | undefined;
  /** how often to look again while a Secret is missing (its creation is watched, too) */
  secretRetryMs?: number | undefined;
  /** how soon to retry deleting a superseded integration that routers still use */
  staleRetryMs?: number | undefined;
  /** how soon to retry deleting while routers still use the integration */
  deletionRetryMs?: number | undefined;
}

const idOf = (p: NotificationProvider) => ({
  kind: NotificationProviderKind.kind,
  namespace: p.metadata?.namespace ?? '',
  name: p.metadata?.name ?? '',
});

/** Provider keys that read Secret `namespace/name` (for the Secret watch). */
export function providersUsingSecret(providers: readonly NotificationProvider[], namespace: string, secretName: string): string[] {
  const out: string[] = [];
  for (const p of providers) {
    if (p.metadata?.namespace !== namespace || !p.spec) continue;
    const v = validateProviderSpec(p.spec);
    if (!v.ok) continue;
    if (secretRefsOf(v.value).some((u) => u.ref.name === secretName)) out.push(objectKey(namespace, p.metadata?.name ?? ''));
  }
  return out;
}

/**
 * The referenced Secrets, each read once. A read that fails (403, connection) leaves the Secret out: the
 * reconcile then waits as for a missing one, and the message says why.
 */
async function readSecrets(
  uses: readonly SecretUse[],
  namespace: string,
  read: ProviderHandlerDeps['readSecret'],
): Promise<{ found: Map<string, SecretObject>; failed?: string }> {
  const found = new Map<string, SecretObject>();
  for (const name of new Set(uses.map((u) => u.ref.name))) {
    try {
      const s = await read(namespace, name);
      if (s) found.set(name, s);
    } catch (e) {
      return { found, failed: `Secret ${namespace}/${name} could not be read: ${describeKubeError(e)}` };
    }
  }
  return { found };
}

export function providerHandler(deps: ProviderHandlerDeps): ResourceHandler<NotificationProvider> {
  const { service } = deps;

  async function owned(p: NotificationProvider, usable?: (r: { type: string }) => boolean) {
    let all;
    try {
      all = await service.listIntegrations();
    } catch (e) {
      throwServiceFailure(e, 'provider');
    }
    return pickOwned(all, p.status?.integrationId, managedByKey(idOf(p), deps.cluster), usable);
  }

  return {
    kind: NotificationProviderKind,
    resource: resourceOf(NotificationProviderKind),
    cache: deps.providers,
    needsFinalizer: () => true,

    async apply(p: NotificationProvider, log: Logger): Promise<Applied> {
      const o = idOf(p);
      const v = validateProviderSpec(p.spec);
      if (!v.ok) throw new TerminalError(Reason.InvalidSpec, v.errors.join('; '));
      const spec = v.value;
      const missing = missingSettings(spec);
      if (missing) throw new TerminalError(Reason.InvalidSpec, missing);

      const uses = secretRefsOf(spec);
      const read = await readSecrets(uses, o.namespace, deps.readSecret);
      const secrets = read.failed
        ? { ok: false as const, message: read.failed }
        : resolveSecrets(uses, o.namespace, (n) => read.found.get(n));
      if (!secrets.ok) throw new WaitError(Reason.SecretNotFound, secrets.message, { requeueAfter: deps.secretRetryMs ?? 60_000 });

      const desired = desiredIntegration(o, spec, secrets.values, deps.cluster);
      const { current, stale } = await owned(p, (r) => r.type === desired.type);
      let id: string;
      try {
        if (!current) {
          id = (await service.createIntegration(desired)).id;
          log.info({ integrationId: id, type: desired.type }, 'integration created');
        } else {
          id = current.id;
          const plan = planIntegrationUpdate(desired, current, (p.status?.appliedSecretVersion ?? '') !== secrets.version);
          if (plan.update) {
            await service.updateIntegration(id, plan.update);
            log.info({ integrationId: id, drift: plan.drift }, 'integration updated');
          }
        }
      } catch (e) {
        if (e instanceof ServiceApiError && e.kind === 'not-found') {
          // deleted through the API between list and update: create it again on the retry
          throw new WaitError(Reason.ServiceError, e.message, { requeueAfter: 0, fields: { integrationId: undefined } });
        }
        throwServiceFailure(e, 'provider', uses);
      }

      let blocked = 0;
      for (const s of stale) {
        try {
          await service.deleteIntegration(s.id);
          log.info({ integrationId: s.id }, 'superseded integration deleted');
        } catch (e) {
          if (e instanceof ServiceApiError && e.kind === 'conflict') blocked++;
          else throwServiceFailure(e, 'provider');
        }
      }
      return {
        message: `integration ${id} (${desired.type}) in sync`,
        fields: { integrationId: id, appliedSecretVersion: secrets.version || undefined },
        requeueAfter: blocked ? (deps.staleRetryMs ?? 2_000) : undefined,
      };
    },

    async cleanup(p: NotificationProvider, log: Logger): Promise<Cleaned> {
      const { current, stale } = await owned(p);
      const ids = [...(current ? [current] : []), ...stale].map((r) => r.id);
      for (const id of ids) {
        try {
          await service.deleteIntegration(id);
          log.info({ integrationId: id }, 'integration deleted');
        } catch (e) {
          if (e instanceof ServiceApiError && e.kind === 'conflict') {
            const routers = (e.details['routers'] as { id: string; name: string }[] | undefined) ?? [];
            return {
              done: false,
              reason: Reason.DeletionBlocked,
              message: `integration ${id} is still used by router(s) ${routers.map((r) => `${r.name} (${r.id})`).join(', ') || '?'}; waiting for them to be deleted or re-pointed`,
              requeueAfter: deps.deletionRetryMs ?? 2_000,
            };
          }
          throwServiceFailure(e, 'provider');
        }
      }
      return { done: true };
    },
  };
}
