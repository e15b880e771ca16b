/** Render stage: the Notification a claimed delivery sends, with its router's template rendered into it. */
import type { Notification } from '../integrations/types.js';
import type { ClaimedDelivery, IntegrationRecord } from '../store/types.js';
import type { TemplateRenderer } from '../templates/renderer.js';
import { parseSnapshot } from '../grouping/snapshot.js';

/** A group notification's `group` (and `reminder` for a repeat) from the snapshot its delivery was written with. */
function groupOf(d: ClaimedDelivery): Pick<Notification, 'group' | 'reminder'> {
  const snap = d.groupSnapshot === undefined ? null : parseSnapshot(d.groupSnapshot);
  return snap ? { group: snap.group, ...(snap.reminder ? { reminder: true } : {}) } : {};
}

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
  const notification: Notification = {
    id: d.id,
    eventId: d.eventId,
    event,
    occurredAt: d.event.receivedAt,
    router: { id: d.routerId, name: d.routerName },
    integration,
    attempt: d.attempts,
    ...(d.reminder ? { reminder: true } : {}),
    ...groupOf(d),
  };
  const rendered = await templates?.render(d.companyId, notification);
  if (rendered) notification.rendered = rendered;
  return notification;
}
