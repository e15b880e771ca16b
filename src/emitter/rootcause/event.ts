/**
 * A certificate `.notready` event with its root cause (pure): the class, hint, deepest failure and the object that
 * says it go into the documented fields (rootCause, rootCauseHint, rootCauseMessage, rootCauseResource), and two
 * lines into statusMessage, so a consumer or template that reads only the spec's fields sees them too. Any other
 * event is returned as it is.
 */
import type { InternalEvent } from '../../events/families.js';
import { sanitizeEvent } from '../../events/sanitize.js';
import type { RootCause } from './classify.js';

const CERTIFICATE_NOTREADY = 'evt.healthstatus.certmgr-certificate-resource.notready';

/** The lines appended to statusMessage. */
function rootCauseLines(rc: RootCause): string {
  return `Root cause (${rc.class}) in ${rc.resource}: ${rc.message}\nNext step: ${rc.hint}`;
}

export function withRootCause(event: InternalEvent, rc: RootCause | undefined): InternalEvent {
  if (!rc || event.type !== CERTIFICATE_NOTREADY) return event;
  const message = typeof event.data['statusMessage'] === 'string' ? event.data['statusMessage'] : '';
  return sanitizeEvent({
    type: event.type,
    data: {
      ...event.data,
      statusMessage: message ? `${message}\n${rootCauseLines(rc)}` : rootCauseLines(rc),
      rootCause: rc.class,
      rootCauseHint: rc.hint,
      rootCauseMessage: rc.message,
      rootCauseResource: rc.resource,
    },
  });
}
