/** Render stage: the Notification a claimed delivery sends, with its router's template rendered into it. */
import type { Notification } from '../integrations/types.js';
import type { ClaimedDelivery, IntegrationRecord } from '../store/types.js';
import type { TemplateRenderer } from '../templates/renderer.js';
import { parseSnapshot } from '../grouping/snapshot.js';

/**
 * The notification of a claimed delivery. A template that does not render sends the default message (counted by
 * the renderer), never a dead letter; throws only when the store could not be read.
 */
export async function renderNotification(
  d: ClaimedDelivery,
  event: Notification['event'],
  integration: IntegrationRecord,
  templates: Pick<TemplateRenderer, 'render'> | undefined,
): Promise<Notification> {
  // a group notification's group (and reminder, for a repeat) come from the snapshot its delivery was written with
  const snap = d.groupSnapshot === undefined ? null : parseSnapshot(d.groupSnapshot);
  const notification: Notification = {
    id: d.id,
    eventId: d.eventId,
    event,
    occurredAt: d.event.receivedAt,
    router: { id: d.routerId, name: d.routerName },
    integration,
    attempt: d.attempts,
    reminder: d.reminder || snap?.reminder || undefined,
    group: snap?.group,
  };
  const rendered = await templates?.render(d.companyId, notification);
  if (rendered) notification.rendered = rendered;
  return notification;
}
