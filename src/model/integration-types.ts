/**
 * The integration types' names: the domain vocabulary (stored in records, named by the API and the operator).
 * Everything else about a type (parameters, secrets, order mode, rate limit, notifier) is its descriptor in
 * src/integrations/<type>.ts, listed in src/integrations/registry.ts. The names live here, apart from the
 * descriptors, so that records and the roles that only name types (store, client, operator) do not import the
 * notifiers; the registry is typed `Record<IntegrationType, …>`, so a name without a descriptor does not compile.
 */
export const INTEGRATION_TYPES = [
  'INCIDENT_MGMT',
  'WEBHOOK',
  'EMAIL',
  'SLACK',
  'TEAMS',
  'OPSGENIE',
  'GOOGLE_CHAT',
  'DISCORD',
  'GENERIC_WEBHOOK',
  'ALERTMANAGER',
] as const;
export type IntegrationType = (typeof INTEGRATION_TYPES)[number];
