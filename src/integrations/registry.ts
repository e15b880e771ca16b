/**
 * The integration-type registry: one descriptor per type, each defined in its own file. Everything that
 * depends on the type (parameter validation, delivery order mode, rate limits, the API's create mutations,
 * notifiers) reads it here; the client, the operator and the console read the descriptors' pure part,
 * INTEGRATION_META (model/integration-types.ts). Adding a type: docs/DEVELOPMENT.md.
 */
import type { IntegrationType } from '../model/integration-types.js';
import { alertmanager } from './alertmanager.js';
import { slack, teams } from './chat.js';
import { discord } from './discord.js';
import { email } from './email.js';
import { genericWebhook } from './generic-webhook.js';
import { googleChat } from './google-chat.js';
import { incident } from './incident.js';
import { opsgenie } from './opsgenie.js';
import type { IntegrationDescriptor } from './types.js';
import { webhook } from './webhook.js';

// Typed by the names in model/integration-types.ts: a name without a descriptor (or the reverse) does not compile.
export const INTEGRATIONS: Readonly<Record<IntegrationType, IntegrationDescriptor>> = {
  INCIDENT_MGMT: incident,
  WEBHOOK: webhook,
  EMAIL: email,
  SLACK: slack,
  TEAMS: teams,
  OPSGENIE: opsgenie,
  GOOGLE_CHAT: googleChat,
  DISCORD: discord,
  GENERIC_WEBHOOK: genericWebhook,
  ALERTMANAGER: alertmanager,
};

/** The descriptor of a type, or undefined for a name that is not one (e.g. a row written by a newer version). */
export function descriptorOf(type: string): IntegrationDescriptor | undefined {
  return Object.hasOwn(INTEGRATIONS, type) ? INTEGRATIONS[type as IntegrationType] : undefined;
}
