/** Ingestion stage parse: one event or an array of up to 1,000, each checked against its type's schema. */
import { validateEvent } from '../events/schemas.js';
import { familyOfType, type InternalEvent } from '../events/families.js';
import { ValidationErrors, type FieldError } from '../model/errors.js';

export const MAX_EVENTS_PER_REQUEST = 1000;

/** Validates one event or an array of up to 1,000; throws ValidationErrors naming index and field. */
export function parseEvents(body: unknown): InternalEvent[] {
  const many = Array.isArray(body);
  const list = many ? (body as unknown[]) : [body];
  if (many && list.length === 0)
    throw new ValidationErrors([
      { code: 'BAD_USER_INPUT', field: '', message: 'no events: send one event { type, data } or a non-empty array' },
    ]);
  if (list.length > MAX_EVENTS_PER_REQUEST)
    throw new ValidationErrors([
      { code: 'BAD_USER_INPUT', field: '', message: `at most ${MAX_EVENTS_PER_REQUEST} events per request, got ${list.length}` },
    ]);
  const errors: FieldError[] = [];
  const events: InternalEvent[] = [];
  list.forEach((e, i) => {
    const r = validateEvent(e);
    if (r.ok && familyOfType(r.event.type).origin === 'hub') {
      // the hub's own families (docs/inventory.md "Silent clusters as events") state what only the hub knows
      const field = many ? `[${i}].type` : 'type';
      errors.push({
        code: 'BAD_USER_INPUT',
        field,
        message: `${many ? `event ${i}: ` : ''}type ${r.event.type} is emitted by the hub itself, not accepted from clients`,
      });
    } else if (r.ok) events.push(r.event);
    else
      for (const err of r.errors) {
        const field = many ? `[${i}]${err.path ? '.' + err.path : ''}` : err.path;
        errors.push({ code: 'BAD_USER_INPUT', field, message: `${many ? `event ${i}: ` : ''}${err.path || 'event'} ${err.message}` });
      }
  });
  if (errors.length) throw new ValidationErrors(errors.slice(0, 100));
  return events;
}
