/** NotificationSilence: a maintenance window (a silence in the service, docs/silences.md). */
import { EVENT_TYPE_IDS } from '../events/families.js';
import {
  ageColumn,
  conditionsSchema,
  messageColumn,
  observedGenerationSchema,
  readyColumn,
  reasonColumn,
  type CustomResource,
  type KindDef,
} from './meta.js';
import { defineSchema, type Infer } from './schema.js';

/** Mirror the service's limits (src/cel FILTER_LIMITS, src/silences SILENCE_LIMITS); the service compiles the matcher. */
const MATCHER_MAX_LENGTH = 2000;
const COMMENT_MAX_LENGTH = 1024;
const CREATED_BY_MAX_LENGTH = 256;

export const silenceSpecSchema = defineSchema({
  type: 'object',
  required: ['matcher', 'endsAt', 'comment'],
  properties: {
    matcher: {
      type: 'string',
      minLength: 1,
      maxLength: MATCHER_MAX_LENGTH,
      description:
        'CEL over `type` and `data`, the routers\' dialect, e.g. data.clusterName == "prod" && type.endsWith(".notready"). Notifications of the events it accepts are recorded SILENCED and not sent while the silence is active.',
    },
    eventTypeId: {
      type: 'string',
      enum: EVENT_TYPE_IDS,
      description: 'The event family the matcher is checked against. Omitted: every family it compiles for.',
    },
    startsAt: { type: 'string', format: 'date-time', description: 'RFC 3339. Omitted: when the silence is first applied.' },
    endsAt: { type: 'string', format: 'date-time', description: 'RFC 3339, after startsAt, at most 366 days later.' },
    comment: { type: 'string', minLength: 1, maxLength: COMMENT_MAX_LENGTH, description: 'Why (shown with every silenced notification).' },
    createdBy: {
      type: 'string',
      minLength: 1,
      maxLength: CREATED_BY_MAX_LENGTH,
      description: 'The author. Default: k8s:<namespace>/<name>.',
    },
  },
});

export const silenceStatusSchema = defineSchema({
  type: 'object',
  properties: {
    observedGeneration: observedGenerationSchema,
    conditions: conditionsSchema,
    silenceId: { type: 'string', description: 'Id of the silence in the service.' },
    state: { type: 'string', description: 'PENDING, ACTIVE or EXPIRED when last reconciled.' },
  },
});

export type NotificationSilenceSpec = Infer<typeof silenceSpecSchema>;
export type NotificationSilenceStatus = Infer<typeof silenceStatusSchema>;
export type NotificationSilence = CustomResource<NotificationSilenceSpec, NotificationSilenceStatus>;

export const NotificationSilenceKind: KindDef = {
  kind: 'NotificationSilence',
  plural: 'notificationsilences',
  singular: 'notificationsilence',
  listKind: 'NotificationSilenceList',
  shortNames: ['nsilence'],
  scope: 'Namespaced',
  description: 'A maintenance window: notifications of the events its CEL matcher accepts are recorded and not sent.',
  specSchema: silenceSpecSchema,
  statusSchema: silenceStatusSchema,
  printerColumns: [
    readyColumn,
    { name: 'State', type: 'string', jsonPath: '.status.state' },
    { name: 'Starts', type: 'string', jsonPath: '.spec.startsAt' },
    { name: 'Ends', type: 'string', jsonPath: '.spec.endsAt' },
    { name: 'Matcher', type: 'string', jsonPath: '.spec.matcher', priority: 1 },
    { name: 'Silence', type: 'string', jsonPath: '.status.silenceId', priority: 1 },
    reasonColumn,
    messageColumn,
    ageColumn,
  ],
};
