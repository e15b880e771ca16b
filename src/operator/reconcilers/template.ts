/** NotificationTemplate → a notification template in the service (docs/templates.md). */
import type { Logger } from 'pino';
import { validateTemplateSpec } from '../../api/index.js';
import { Reason } from '../../api/meta.js';
import { NotificationTemplateKind, type NotificationTemplate } from '../../api/notificationtemplate.js';
import type { NotificationRouter } from '../../api/notificationrouter.js';
import { resourceOf } from '../../kube/client.js';
import type { ResilientInformer } from '../../kube/informer.js';
import { compileTemplate } from '../../templates/engine.js';
import { desiredTemplate, managedByKey, pickOwned, planTemplateUpdate } from '../desired.js';
import { throwServiceFailure } from '../errors.js';
import { TerminalError, WaitError, objectKey, type Applied, type Cleaned, type ResourceHandler } from '../../runtime/controller.js';
import type { ServiceApi, TemplateView } from '../../client/service-api.js';
import { ServiceApiError } from '../../client/errors.js';
import type { TemplateParts } from '../../model/records.js';

export interface TemplateHandlerDeps {
  service: ServiceApi;
  templates: ResilientInformer<NotificationTemplate>;
  /** suffix of managedBy when several clusters share one service */
  cluster?: string | undefined;
  /** how often to look again while routers of the service still use a template being deleted */
  deletionRetryMs?: number | undefined;
}

const idOf = (t: NotificationTemplate) => ({
  kind: NotificationTemplateKind.kind,
  namespace: t.metadata?.namespace ?? '',
  name: t.metadata?.name ?? '',
});

/** Router keys whose templateRef names template `namespace/name` (for the template watch). */
export function routersUsingTemplate(routers: readonly NotificationRouter[], namespace: string, templateName: string): string[] {
  return routers
    .filter((r) => r.metadata?.namespace === namespace && r.spec?.templateRef?.name === templateName)
    .map((r) => objectKey(namespace, r.metadata?.name ?? ''));
}

export function templateHandler(deps: TemplateHandlerDeps): ResourceHandler<NotificationTemplate> {
  const { service } = deps;

  async function owned(t: NotificationTemplate): Promise<{ current: TemplateView | undefined; stale: TemplateView[] }> {
    let all;
    try {
      all = await service.listTemplates();
    } catch (e) {
      throwServiceFailure(e, 'template');
    }
    return pickOwned(all, t.status?.templateId, managedByKey(idOf(t), deps.cluster));
  }

  async function deleteAll(records: TemplateView[], log: Logger): Promise<void> {
    for (const rec of records) {
      try {
        await service.deleteTemplate(rec.id);
        log.info({ templateId: rec.id }, 'template deleted');
      } catch (e) {
        // still used by a router (its NotificationRouter is re-pointed or deleted first): look again later
        if (e instanceof ServiceApiError && e.kind === 'conflict')
          throw new WaitError(Reason.Progressing, `template ${rec.id} is still used by routers: ${e.message}`, {
            requeueAfter: deps.deletionRetryMs ?? 5_000,
          });
        throwServiceFailure(e, 'template');
      }
    }
  }

  return {
    kind: NotificationTemplateKind,
    resource: resourceOf(NotificationTemplateKind),
    cache: deps.templates,
    needsFinalizer: () => true,

    async apply(t: NotificationTemplate, log: Logger): Promise<Applied> {
      const o = idOf(t);
      const v = validateTemplateSpec(t.spec);
      if (!v.ok) throw new TerminalError(Reason.InvalidSpec, v.errors.join('; '));
      // the admission webhook refuses these; without it (or for an object stored before it) say where
      const c = compileTemplate(v.value.parts as TemplateParts);
      if (!c.ok)
        throw new TerminalError(
          Reason.InvalidTemplate,
          `spec.parts.${c.issue.key}.${c.issue.field}: line ${c.issue.line}, column ${c.issue.column}: ${c.issue.message}`,
        );
      const desired = desiredTemplate(o, v.value, deps.cluster);
      const { current, stale } = await owned(t);
      let id: string;
      try {
        if (!current) {
          id = (await service.createTemplate(desired)).id;
          log.info({ templateId: id }, 'template created');
        } else {
          id = current.id;
          const plan = planTemplateUpdate(desired, current);
          if (plan.update) {
            await service.updateTemplate(id, plan.update);
            log.info({ templateId: id, drift: plan.drift }, 'template updated');
          }
        }
      } catch (e) {
        throwServiceFailure(e, 'template');
      }
      await deleteAll(stale, log);
      return { message: `template ${id} in sync`, fields: { templateId: id } };
    },

    async cleanup(t: NotificationTemplate, log: Logger): Promise<Cleaned> {
      const { current, stale } = await owned(t);
      await deleteAll([...(current ? [current] : []), ...stale], log);
      return { done: true };
    },
  };
}
