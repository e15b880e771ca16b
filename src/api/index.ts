/** The operator's API: CRD kinds, their schemas, types and validators. */
import { MonitoringConfigKind, monitoringSpecSchema, type MonitoringConfigSpec } from './monitoringconfig.js';
import { NotificationProviderKind, providerSpecSchema, type NotificationProviderSpec } from './notificationprovider.js';
import { NotificationRouterKind, routerSpecSchema, type NotificationRouterSpec } from './notificationrouter.js';
import { NotificationTemplateKind, templateSpecSchema, type NotificationTemplateSpec } from './notificationtemplate.js';
import { NotificationSilenceKind, silenceSpecSchema, type NotificationSilenceSpec } from './notificationsilence.js';
import type { KindDef } from './meta.js';
import { validateAgainst, type Validation } from './validation.js';

export * from './meta.js';
export * from './monitoringconfig.js';
export * from './notificationprovider.js';
export * from './notificationrouter.js';
export * from './notificationtemplate.js';
export * from './notificationsilence.js';
export type { Schema } from './schema.js';

/** Every kind, in the order the generator writes them. */
export const KINDS: readonly KindDef[] = [
  MonitoringConfigKind,
  NotificationProviderKind,
  NotificationRouterKind,
  NotificationTemplateKind,
  NotificationSilenceKind,
];

export const validateProviderSpec = (spec: unknown): Validation<NotificationProviderSpec> => validateAgainst(providerSpecSchema, spec);
export const validateRouterSpec = (spec: unknown): Validation<NotificationRouterSpec> => validateAgainst(routerSpecSchema, spec);
export const validateMonitoringSpec = (spec: unknown): Validation<MonitoringConfigSpec> => validateAgainst(monitoringSpecSchema, spec);
export const validateTemplateSpec = (spec: unknown): Validation<NotificationTemplateSpec> => validateAgainst(templateSpecSchema, spec);
export const validateSilenceSpec = (spec: unknown): Validation<NotificationSilenceSpec> => validateAgainst(silenceSpecSchema, spec);
