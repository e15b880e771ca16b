/**
 * The variables a template sees (docs/templates.md), derived from the Notification with the event view
 * (model/event-view.ts) and render.ts's texts. Pure. Hub-extension fields of the event data (daysUntilExpiry,
 * notAfter, runbookUrl, clusterName...) are read defensively: a client-sent event may lack them, and then the
 * variable is null.
 */
import type { InternalEvent } from '../events/families.js';
import { render } from '../integrations/render.js';
import type { GroupMember, Notification } from '../integrations/types.js';
import type { EventView } from '../model/event-view.js';

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const int = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) ? v : null);

function member(m: GroupMember) {
  return { eventId: m.eventId, type: m.event.type, data: m.event.data, occurredAt: new Date(m.occurredAt).toISOString() };
}

function clusterOf(event: InternalEvent, view: EventView): { id: string | null; name: string | null } {
  if (view.kind !== 'certificateExpiration') return { id: view.cluster.id || null, name: view.cluster.name || null };
  return { id: str(event.data['clusterId']), name: str(event.data['clusterName']) };
}

export interface VariableOptions {
  /** --public-url (no trailing slash): consoleUrl links to the console's page for the event; absent: null. */
  publicUrl?: string | undefined;
}

/** The console page of an event (docs/console.md hash routes): health events their health page, expiration the inventory. */
export function consoleUrlOf(publicUrl: string | undefined, kind: string): string | null {
  if (!publicUrl) return null;
  return `${publicUrl}/ui/#/${kind === 'certificateExpiration' ? 'certificates' : 'health'}`;
}

/** Everything a template can name; absent facts are null (Liquid renders null as empty). */
export function templateVariables(n: Notification, opts: VariableOptions = {}): Record<string, unknown> {
  const d = n.event.data;
  const r = render(n.event, n.router);
  return {
    event: { id: n.eventId, type: n.event.type, data: d, occurredAt: new Date(n.occurredAt).toISOString() },
    kind: r.view.kind,
    state: r.view.state,
    severity: r.severity,
    // today's message, to reuse or extend
    title: r.title,
    summary: r.summary,
    facts: r.facts,
    router: { id: n.router.id, name: n.router.name },
    integration: { id: n.integration.id, name: n.integration.name, type: n.integration.type },
    cluster: clusterOf(n.event, r.view),
    daysUntilExpiry: int(d['daysUntilExpiry']),
    notAfter: str(d['notAfter']),
    runbookUrl: str(d['runbookUrl']),
    consoleUrl: consoleUrlOf(opts.publicUrl, r.view.kind),
    reminder: n.reminder === true,
    group: n.group
      ? {
          key: n.group.key,
          labels: n.group.labels,
          firing: n.group.firing.map(member),
          resolved: n.group.resolved.map(member),
          firingCount: n.group.firingCount,
          resolvedCount: n.group.resolvedCount,
          allResolved: n.group.allResolved,
        }
      : null,
  };
}
