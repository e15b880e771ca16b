/**
 * Previewing a template (GraphQL previewNotificationTemplate, `certmgr-notify template render`): the parts rendered
 * on an event for one integration type, as the delivery worker renders them, with the engine's limits. Nothing is
 * stored or sent: the notification around the event is a stand-in with nil ids.
 */
import type { InternalEvent } from '../events/families.js';
import type { Notification, RenderedMessage } from '../integrations/types.js';
import type { IntegrationType } from '../model/integration-types.js';
import { renderTemplate, type CompiledTemplate } from './engine.js';
import { templateVariables } from './variables.js';

const NIL_ID = '00000000-0000-4000-8000-000000000000';

export interface PreviewOptions {
  /** The time the preview renders at (`event.occurredAt`). */
  now: number;
  /** --public-url: consoleUrl; absent: null, as in a hub without it. */
  publicUrl?: string | undefined;
  /** `router.name` and `integration.name` (default `preview`). */
  routerName?: string | undefined;
  integrationName?: string | undefined;
}

/** The notification a preview renders: `event` to an integration of `type`, first attempt. */
function previewNotification(event: InternalEvent, type: IntegrationType, o: PreviewOptions): Notification {
  return {
    id: NIL_ID,
    eventId: NIL_ID,
    event,
    occurredAt: o.now,
    router: { id: NIL_ID, name: o.routerName ?? 'preview' },
    integration: {
      id: NIL_ID,
      companyId: '',
      name: o.integrationName ?? 'preview',
      type,
      enabled: true,
      config: {},
      secrets: {},
      managedBy: null,
      createdAt: o.now,
      updatedAt: o.now,
    },
    attempt: 1,
  };
}

/** Renders `template` for `type` on `event`; throws TemplateRenderError as a delivery's render would fail. */
export function renderPreview(
  template: CompiledTemplate,
  event: InternalEvent,
  type: IntegrationType,
  o: PreviewOptions,
): Promise<RenderedMessage> {
  return renderTemplate(template, type, templateVariables(previewNotification(event, type, o), { publicUrl: o.publicUrl }));
}
