/**
 * The root-cause fields of certificate health events (hub extension, docs/emitter.md "Root cause"): the classes
 * the emitter's classifier (src/emitter/rootcause/classify.ts) gives the deepest failure below an unhealthy
 * Certificate, and the bounds of the fields that carry it. Part of the event contract: schemas.ts and the
 * notifiers read these.
 */

export const ROOT_CAUSE_CLASSES = [
  'dns-propagation',
  'http-self-check',
  'rate-limited',
  'credentials',
  'ca-error',
  'approval-denied',
  'pending',
] as const;
export type RootCauseClass = (typeof ROOT_CAUSE_CLASSES)[number];

export const isRootCauseClass = (v: unknown): v is RootCauseClass => (ROOT_CAUSE_CLASSES as readonly unknown[]).includes(v);

/** Code points of each field: the class, the hint, the deepest failure's text and the object that says it. */
export const ROOT_CAUSE_LIMITS = { class: 32, hint: 256, message: 1024, resource: 512 } as const;

/** The event data fields, optional on certificate health events. */
export const ROOT_CAUSE_FIELDS = ['rootCause', 'rootCauseHint', 'rootCauseMessage', 'rootCauseResource'] as const;
