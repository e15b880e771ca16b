/** MonitoringConfig: the CERTIFICATE_EXPIRATION inventory monitoring configuration. Cluster-scoped singleton `default`. */
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

/** Only the object with this name is applied; any other reports Ready=False, reason Ignored. */
export const MONITORING_CONFIG_NAME = 'default';

export const monitoringSpecSchema = defineSchema({
  type: 'object',
  properties: {
    enabled: { type: 'boolean', default: true, description: 'Whether expiration events are produced.' },
    thresholds: {
      type: 'array',
      maxItems: 3,
      default: [30, 14, 7],
      'x-kubernetes-list-type': 'set',
      description: 'Days before expiry at which an event is sent (at most 3, distinct). ruleId = 1-based position.',
      items: { type: 'integer', minimum: 1, maximum: 3650 },
    },
    applicationIds: {
      type: 'array',
      maxItems: 1000,
      default: [],
      'x-kubernetes-list-type': 'set',
      description: 'Applications to monitor; empty: all applications.',
      items: { type: 'string', minLength: 1, maxLength: 255 },
    },
    includeUnassignedCertificates: { type: 'boolean', default: true, description: 'Also monitor certificates assigned to no application.' },
  },
});

export const monitoringStatusSchema = defineSchema({
  type: 'object',
  properties: {
    observedGeneration: observedGenerationSchema,
    conditions: conditionsSchema,
    configId: { type: 'string', description: 'Id of the configuration in the service.' },
    rules: {
      type: 'array',
      description: 'ruleId of each threshold, as expiration events carry it (filter routers on data.ruleId).',
      items: {
        type: 'object',
        required: ['ruleId', 'threshold'],
        properties: { ruleId: { type: 'integer' }, threshold: { type: 'integer' } },
      },
    },
  },
});

export type MonitoringConfigSpec = Infer<typeof monitoringSpecSchema>;
export type MonitoringConfigStatus = Infer<typeof monitoringStatusSchema>;
export type MonitoringConfig = CustomResource<MonitoringConfigSpec, MonitoringConfigStatus>;

export const MonitoringConfigKind: KindDef = {
  kind: 'MonitoringConfig',
  plural: 'monitoringconfigs',
  singular: 'monitoringconfig',
  listKind: 'MonitoringConfigList',
  shortNames: ['mcfg'],
  scope: 'Cluster',
  description: 'Certificate expiration monitoring settings. Only the object named `default` is applied.',
  specSchema: monitoringSpecSchema,
  statusSchema: monitoringStatusSchema,
  printerColumns: [
    readyColumn,
    { name: 'Enabled', type: 'boolean', jsonPath: '.spec.enabled' },
    { name: 'Thresholds', type: 'string', jsonPath: '.spec.thresholds' },
    reasonColumn,
    messageColumn,
    ageColumn,
  ],
};
