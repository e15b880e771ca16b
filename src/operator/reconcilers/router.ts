/** NotificationRouter → a router in the service (created with createNotificationRouter). */
import type { Logger } from 'pino';
import { validateRouterSpec } from '../../api/index.js';
import { ConditionType, Reason } from '../../api/meta.js';
import type { NotificationProvider } from '../../api/notificationprovider.js';
import { NotificationRouterKind, type NotificationRouter } from '../../api/notificationrouter.js';
import type { NotificationTemplate } from '../../api/notificationtemplate.js';
import { resourceOf } from '../../kube/client.js';
import { isDeleting } from '../../runtime/finalizer.js';
import type { ResilientInformer } from '../../kube/informer.js';
import { desiredRouter, managedByKey, pickOwned, planRouterUpdate } from '../desired.js';
import { throwServiceFailure } from '../errors.js';
import { TerminalError, WaitError, objectKey, type Applied, type Cleaned, type ResourceHandler } from '../../runtime/controller.js';
import { ServiceApiError } from '../../client/errors.js';
import type { RouterView, ServiceApi } from '../../client/service-api.js';
import { findCondition } from '../../runtime/status.js';

export interface RouterHandlerDeps {
  service: ServiceApi;
  routers: ResilientInformer<NotificationRouter>;
  providers: ResilientInformer<NotificationProvider>;
  /** NotificationTemplates (templateRef); absent: templateRef is not resolved (the router is sent without one) */
  templates?: ResilientInformer<NotificationTemplate>;
  /** suffix of managedBy when several clusters share one service */
  cluster?: string | undefined;
  /** how often to look again while the provider is missing or not ready (provider changes are watched, too) */
  providerRetryMs?: number | undefined;
  /** ask the provider controller to look again (its integration vanished) */
  requeueProvider?: (key: string) => void;
}

const idOf = (r: NotificationRouter) => ({
  kind: NotificationRouterKind.kind,
  namespace: r.metadata?.namespace ?? '',
  name: r.metadata?.name ?? '',
});

/** Router keys whose providerRef names provider `namespace/name` (for the provider watch). */
export function routersUsingProvider(routers: readonly NotificationRouter[], namespace: string, providerName: string): string[] {
  return routers
    .filter((r) => r.metadata?.namespace === namespace && r.spec?.providerRef?.name === providerName)
    .map((r) => objectKey(namespace, r.metadata?.name ?? ''));
}

export function routerHandler(deps: RouterHandlerDeps): ResourceHandler<NotificationRouter> {
  const { service } = deps;
  const retry = deps.providerRetryMs ?? 30_000;

  async function owned(r: NotificationRouter): Promise<{ current: RouterView | undefined; stale: RouterView[] }> {
    let all;
    try {
      all = await service.listRouters();
    } catch (e) {
      throwServiceFailure(e, 'router');
    }
    return pickOwned(all, r.status?.routerId, managedByKey(idOf(r), deps.cluster), (x) => x.generation === 'ROUTER');
  }

  async function deleteAll(records: RouterView[], log: Logger): Promise<void> {
    for (const rec of records) {
      try {
        await service.deleteRouter(rec.id);
        log.info({ routerId: rec.id }, 'router deleted');
      } catch (e) {
        throwServiceFailure(e, 'router');
      }
    }
  }

  return {
    kind: NotificationRouterKind,
    resource: resourceOf(NotificationRouterKind),
    cache: deps.routers,
    needsFinalizer: () => true,

    async apply(r: NotificationRouter, log: Logger): Promise<Applied> {
      const o = idOf(r);
      const v = validateRouterSpec(r.spec);
      if (!v.ok) throw new TerminalError(Reason.InvalidSpec, v.errors.join('; '));
      const spec = v.value;

      const provider = deps.providers.get(spec.providerRef.name, o.namespace);
      if (!provider || isDeleting(provider)) {
        // a router cannot exist in the service without its integration, and a provider being deleted waits
        // for the routers that use it: remove ours
        const { current, stale } = await owned(r);
        await deleteAll([...(current ? [current] : []), ...stale], log);
        throw new WaitError(
          Reason.ProviderNotFound,
          `NotificationProvider ${o.namespace}/${spec.providerRef.name} ${provider ? 'is being deleted' : 'not found'}`,
          { requeueAfter: retry, fields: { routerId: undefined, integrationId: undefined } },
        );
      }
      const ready = findCondition(provider.status?.conditions, ConditionType.Ready);
      const integrationId = provider.status?.integrationId;
      if (!integrationId || ready?.status !== 'True') {
        throw new WaitError(
          Reason.ProviderNotReady,
          `NotificationProvider ${o.namespace}/${spec.providerRef.name} is not Ready${ready ? ` (${ready.reason})` : ''}`,
          { requeueAfter: retry },
        );
      }

      // templateRef: the template's id once it is Ready; gone or being deleted: the router goes on without it
      // (default messages, and the template's deletion is not held up by this router), and reports why
      let templateId: string | null = null;
      let templateWait: WaitError | undefined;
      if (spec.templateRef) {
        const t = deps.templates?.get(spec.templateRef.name, o.namespace);
        const tReady = findCondition(t?.status?.conditions, ConditionType.Ready);
        if (!t || isDeleting(t))
          templateWait = new WaitError(
            Reason.TemplateNotFound,
            `NotificationTemplate ${o.namespace}/${spec.templateRef.name} ${t ? 'is being deleted' : 'not found'}; sending the default messages`,
            { requeueAfter: retry },
          );
        else if (!t.status?.templateId || tReady?.status !== 'True')
          templateWait = new WaitError(
            Reason.TemplateNotReady,
            `NotificationTemplate ${o.namespace}/${spec.templateRef.name} is not Ready${tReady ? ` (${tReady.reason})` : ''}`,
            { requeueAfter: retry },
          );
        else templateId = t.status.templateId;
        // not ready yet (first apply): keep whatever template the router has rather than clearing it
        if (templateWait && t && !isDeleting(t)) throw templateWait;
      }

      const desired = desiredRouter(o, spec, integrationId, deps.cluster, templateId);
      const { current, stale } = await owned(r);
      let id: string;
      try {
        if (!current) {
          id = (await service.createRouter(desired)).id;
          log.info({ routerId: id }, 'router created');
        } else {
          id = current.id;
          const plan = planRouterUpdate(desired, current);
          if (plan.update) {
            await service.updateRouter(id, plan.update);
            log.info({ routerId: id, drift: plan.drift }, 'router updated');
          }
        }
      } catch (e) {
        if (e instanceof ServiceApiError && e.kind === 'not-found') {
          // the integration (or the router) vanished through the API: the provider recreates it
          deps.requeueProvider?.(objectKey(o.namespace, spec.providerRef.name));
          throw new WaitError(Reason.ProviderNotReady, e.message, { requeueAfter: 2_000 });
        }
        throwServiceFailure(e, 'router');
      }
      await deleteAll(stale, log);
      if (templateWait)
        throw new WaitError(templateWait.reason, templateWait.message, {
          ...templateWait.opts,
          fields: { routerId: id, integrationId },
        });
      return {
        message: `router ${id} in sync: ${spec.eventTypeId} → integration ${integrationId}`,
        fields: { routerId: id, integrationId },
      };
    },

    async cleanup(r: NotificationRouter, log: Logger): Promise<Cleaned> {
      const { current, stale } = await owned(r);
      await deleteAll([...(current ? [current] : []), ...stale], log);
      return { done: true };
    },
  };
}
