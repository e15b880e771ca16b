/**
 * The operator's only way into the service: its GraphQL API (graphql-request) and the REST monitoring
 * configuration (fetch), with an API key. Works the same against the in-process service and a remote one.
 * The spec's operations (src/client/operations.ts) are used where they fit; the extra selections the operator
 * needs (managedBy, type, generation) are below. Errors become ServiceApiError with the service's own message
 * only: graphql-request's ClientError embeds the request variables (secrets) and is never logged or rethrown.
 */
import { ClientError, GraphQLClient } from 'graphql-request';
import {
  CreateNotificationRouter,
  DeleteIntegrations,
  DeleteNotificationRouter,
  MONITORING_CONFIG_PATH,
  UpdateNotificationRouter,
} from './operations.js';

export type IntegrationType = 'INCIDENT_MGMT' | 'WEBHOOK' | 'EMAIL' | 'SLACK' | 'TEAMS';

export interface IntegrationView {
  id: string;
  name: string;
  enabled: boolean;
  type: IntegrationType;
  emailTo: string[] | null;
  emailFrom: string | null;
  webhookSigned: boolean | null;
  managedBy: string | null;
}

export interface RouterView {
  id: string;
  name: string;
  enabled: boolean;
  eventTypeId: string;
  filter: string;
  integrationId: string;
  generation: 'ROUTER' | 'ROUTING_CONFIGURATION';
  managedBy: string | null;
}

export interface MonitoringConfigValue {
  enabled: boolean;
  thresholds: number[];
  applicationIds: string[];
  includeUnassignedCertificates: boolean;
}

export interface MonitoringConfigView extends MonitoringConfigValue {
  id: string;
  rules: { ruleId: number; threshold: number }[];
}

/** Type-specific parameters, as updateIntegration takes them (secrets included: never log this). */
export type IntegrationParams =
  | { incidentMgmtParams: { IntegrationKey: string } }
  | { webhookParams: { url: string; signingSecret?: string } }
  | { emailParams: { to: string[]; from?: string } }
  | { slackParams: { webhookUrl: string } }
  | { teamsParams: { webhookUrl: string } };

export interface CreateIntegrationInput {
  type: IntegrationType;
  name: string;
  enabled: boolean;
  managedBy: string;
  params: IntegrationParams;
}

export interface UpdateIntegrationInput {
  name?: string;
  enabled?: boolean;
  managedBy?: string;
  params?: IntegrationParams;
}

export interface RouterInput {
  name: string;
  eventTypeId: string;
  filter: string;
  integrationId: string;
  enabled: boolean;
  managedBy: string;
}

export type ServiceErrorKind =
  | 'unavailable' // network error, timeout, 5xx
  | 'unauthenticated'
  | 'invalid-filter'
  | 'bad-input'
  | 'not-found'
  | 'conflict'
  | 'quota-exceeded' // QUOTA_EXCEEDED: the company holds its limit of routers or integrations
  | 'smtp-not-configured' // SMTP_NOT_CONFIGURED: an EMAIL integration on a service without --smtp-url
  | 'other';

export class ServiceApiError extends Error {
  constructor(
    readonly kind: ServiceErrorKind,
    message: string,
    /** GraphQL `extensions` (line/column, routers, field) or REST error entries; never secret values */
    readonly details: Record<string, unknown> = {},
    /** the service's own error message (the service never puts secret values in it) */
    readonly serviceMessage: string = message,
  ) {
    super(message);
    this.name = 'ServiceApiError';
  }
}

/** What the reconcilers need; `GraphQLServiceApi` is the real one, tests may fake it. */
export interface ServiceApi {
  listIntegrations(): Promise<IntegrationView[]>;
  createIntegration(input: CreateIntegrationInput): Promise<IntegrationView>;
  updateIntegration(id: string, input: UpdateIntegrationInput): Promise<IntegrationView>;
  deleteIntegration(id: string): Promise<void>;
  listRouters(): Promise<RouterView[]>;
  createRouter(input: RouterInput): Promise<{ id: string }>;
  updateRouter(id: string, input: Partial<RouterInput>): Promise<void>;
  deleteRouter(id: string): Promise<void>;
  getMonitoringConfig(): Promise<MonitoringConfigView>;
  putMonitoringConfig(v: MonitoringConfigValue): Promise<MonitoringConfigView>;
}

const INTEGRATION_FIELDS = 'id name enabled type emailTo emailFrom webhookSigned managedBy';

const ListIntegrations = /* GraphQL */ `
  query OperatorListIntegrations { integrations { nodes { ${INTEGRATION_FIELDS} } } }
`;
const ListRouters = /* GraphQL */ `
  query OperatorListRouters {
    searchNotificationRoutingConfigurations {
      nodes {
        id name enabled generation managedBy
        eventType { id }
        notificationRouterFilterConfig { advancedFilterExpression }
        notificationRouterIntegrationConfig { notificationRouterIntegrationID }
      }
    }
  }
`;
const CREATE_MUTATION: Record<IntegrationType, { field: string; inputType: string }> = {
  INCIDENT_MGMT: { field: 'createIncidentMgmtIntegration', inputType: 'CreateIncidentMgmtIntegrationInput' },
  WEBHOOK: { field: 'createWebhookIntegration', inputType: 'CreateWebhookIntegrationInput' },
  EMAIL: { field: 'createEmailIntegration', inputType: 'CreateEmailIntegrationInput' },
  SLACK: { field: 'createSlackIntegration', inputType: 'CreateSlackIntegrationInput' },
  TEAMS: { field: 'createTeamsIntegration', inputType: 'CreateTeamsIntegrationInput' },
};
const createIntegrationDoc = (t: IntegrationType): string => {
  const m = CREATE_MUTATION[t];
  return `mutation OperatorCreateIntegration($input: ${m.inputType}!) { ${m.field}(input: $input) { ${INTEGRATION_FIELDS} } }`;
};
const UpdateIntegration = /* GraphQL */ `
  mutation OperatorUpdateIntegration($id: UUID!, $input: UpdateIntegrationInput!) {
    updateIntegration(id: $id, input: $input) { ${INTEGRATION_FIELDS} }
  }
`;

/** The create input of one type: webhook takes url/signingSecret at the top level, the others a params block. */
export function createIntegrationVariables(input: CreateIntegrationInput): Record<string, unknown> {
  const base = { name: input.name, enabled: input.enabled, managedBy: input.managedBy };
  const p = input.params;
  if ('webhookParams' in p) {
    return { ...base, url: p.webhookParams.url, ...(p.webhookParams.signingSecret ? { signingSecret: p.webhookParams.signingSecret } : {}) };
  }
  return { ...base, ...p };
}

interface RawRouter {
  id: string;
  name: string;
  enabled: boolean;
  generation: RouterView['generation'];
  managedBy: string | null;
  eventType: { id: string };
  notificationRouterFilterConfig: { advancedFilterExpression: string | null };
  notificationRouterIntegrationConfig: { notificationRouterIntegrationID: string };
}

const routerView = (r: RawRouter): RouterView => ({
  id: r.id,
  name: r.name,
  enabled: r.enabled,
  eventTypeId: r.eventType.id,
  filter: r.notificationRouterFilterConfig.advancedFilterExpression ?? '',
  integrationId: r.notificationRouterIntegrationConfig.notificationRouterIntegrationID,
  generation: r.generation,
  managedBy: r.managedBy,
});

const KIND_BY_CODE: Record<string, ServiceErrorKind> = {
  UNAUTHENTICATED: 'unauthenticated',
  INVALID_FILTER_EXPRESSION: 'invalid-filter',
  BAD_USER_INPUT: 'bad-input',
  NOT_FOUND: 'not-found',
  CONFLICT: 'conflict',
  QUOTA_EXCEEDED: 'quota-exceeded',
  SMTP_NOT_CONFIGURED: 'smtp-not-configured',
  INTERNAL_SERVER_ERROR: 'unavailable',
};

/** Maps anything thrown by graphql-request/fetch to a ServiceApiError without request data. */
export function toServiceError(e: unknown, what: string): ServiceApiError {
  if (e instanceof ServiceApiError) return e;
  if (e instanceof ClientError) {
    const status = e.response.status;
    const first = e.response.errors?.[0];
    const code = typeof first?.extensions?.['code'] === 'string' ? (first.extensions['code'] as string) : undefined;
    const kind: ServiceErrorKind = code ? (KIND_BY_CODE[code] ?? 'other') : status >= 500 || status === 0 ? 'unavailable' : status === 401 ? 'unauthenticated' : 'other';
    const { code: _c, ...ext } = (first?.extensions ?? {}) as Record<string, unknown>;
    void _c;
    const serviceMessage = first?.message ?? `HTTP ${status}`;
    return new ServiceApiError(kind, `${what}: ${serviceMessage}${code ? ` (${code})` : ''}`, { ...ext, ...(code ? { code } : {}), status }, serviceMessage);
  }
  const err = e as { name?: string; message?: string; cause?: { code?: string } } | null;
  const cause = err?.cause?.code ? ` (${err.cause.code})` : '';
  return new ServiceApiError('unavailable', `${what}: service unreachable: ${err?.name === 'TimeoutError' ? 'timed out' : (err?.message ?? String(e))}${cause}`);
}

export interface GraphQLServiceApiOptions {
  /** base URL of the service, e.g. http://127.0.0.1:8080 */
  url: string;
  /** the API key (a function so a rotated key from a Secret is picked up) */
  apiKey: string | (() => string);
  timeoutMs?: number;
}

export class GraphQLServiceApi implements ServiceApi {
  private readonly gql: GraphQLClient;
  private readonly key: () => string;
  private readonly timeoutMs: number;

  constructor(private readonly opts: GraphQLServiceApiOptions) {
    this.key = typeof opts.apiKey === 'function' ? opts.apiKey : () => opts.apiKey as string;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.gql = new GraphQLClient(`${opts.url.replace(/\/$/, '')}/graphql`, {
      headers: () => ({ 'svc-api-key': this.key() }),
      fetch: (input: string | URL | Request, init?: RequestInit) => fetch(input, { ...init, signal: AbortSignal.timeout(this.timeoutMs) }),
    });
  }

  private async request<T>(what: string, doc: string, variables: Record<string, unknown> = {}): Promise<T> {
    try {
      return await this.gql.request<T>(doc, variables);
    } catch (e) {
      throw toServiceError(e, what);
    }
  }

  async listIntegrations(): Promise<IntegrationView[]> {
    const r = await this.request<{ integrations: { nodes: IntegrationView[] } }>('list integrations', ListIntegrations);
    return r.integrations.nodes;
  }

  async createIntegration(input: CreateIntegrationInput): Promise<IntegrationView> {
    const m = CREATE_MUTATION[input.type];
    const r = await this.request<Record<string, IntegrationView>>('create integration', createIntegrationDoc(input.type), {
      input: createIntegrationVariables(input),
    });
    return r[m.field]!;
  }

  async updateIntegration(id: string, input: UpdateIntegrationInput): Promise<IntegrationView> {
    const { params, ...rest } = input;
    const r = await this.request<{ updateIntegration: IntegrationView }>('update integration', UpdateIntegration, {
      id,
      input: { ...rest, ...(params ?? {}) },
    });
    return r.updateIntegration;
  }

  async deleteIntegration(id: string): Promise<void> {
    try {
      await this.request('delete integration', DeleteIntegrations, { ids: [id] });
    } catch (e) {
      if (e instanceof ServiceApiError && e.kind === 'not-found') return;
      throw e;
    }
  }

  async listRouters(): Promise<RouterView[]> {
    const r = await this.request<{ searchNotificationRoutingConfigurations: { nodes: RawRouter[] } }>('list routers', ListRouters);
    return r.searchNotificationRoutingConfigurations.nodes.map(routerView);
  }

  async createRouter(input: RouterInput): Promise<{ id: string }> {
    const r = await this.request<{ createNotificationRouter: { id: string } }>('create router', CreateNotificationRouter, {
      details: { name: input.name, eventTypeId: input.eventTypeId, enabled: input.enabled, managedBy: input.managedBy },
      filterConfig: { advancedFilterExpression: input.filter },
      integrationConfig: { integrationId: input.integrationId },
    });
    return { id: r.createNotificationRouter.id };
  }

  async updateRouter(id: string, input: Partial<RouterInput>): Promise<void> {
    const u: Record<string, unknown> = {};
    if (input.name !== undefined) u['name'] = input.name;
    if (input.enabled !== undefined) u['enabled'] = input.enabled;
    if (input.eventTypeId !== undefined) u['eventTypeId'] = input.eventTypeId;
    if (input.filter !== undefined) u['advancedFilterExpression'] = input.filter;
    if (input.integrationId !== undefined) u['integrationId'] = input.integrationId;
    if (input.managedBy !== undefined) u['managedBy'] = input.managedBy;
    await this.request('update router', UpdateNotificationRouter, {
      updateNotificationRouterId: id,
      updateNotificationRouterConfigurationInput: u,
    });
  }

  async deleteRouter(id: string): Promise<void> {
    try {
      await this.request('delete router', DeleteNotificationRouter, { ids: [id] });
    } catch (e) {
      if (e instanceof ServiceApiError && e.kind === 'not-found') return;
      throw e;
    }
  }

  private async rest<T>(what: string, init: RequestInit = {}): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.opts.url.replace(/\/$/, '')}${MONITORING_CONFIG_PATH}`, {
        ...init,
        headers: { 'svc-api-key': this.key(), ...(init.body ? { 'content-type': 'application/json' } : {}) },
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      throw toServiceError(e, what);
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    if (!res.ok) {
      const errors = ((body as { errors?: { code?: string; message?: string; field?: string }[] } | undefined)?.errors ?? []).slice(0, 10);
      const kind: ServiceErrorKind =
        res.status >= 500 ? 'unavailable' : res.status === 401 ? 'unauthenticated' : res.status === 404 ? 'not-found' : res.status === 400 ? 'bad-input' : 'other';
      const msg = errors.map((e) => (e.field ? `${e.field}: ${e.message}` : e.message)).join('; ') || `HTTP ${res.status}`;
      throw new ServiceApiError(kind, `${what}: ${msg}`, { status: res.status, errors });
    }
    return body as T;
  }

  async getMonitoringConfig(): Promise<MonitoringConfigView> {
    const r = await this.rest<{ id: string; configuration: MonitoringConfigView }>('get monitoring config');
    return { ...r.configuration, id: r.id };
  }

  async putMonitoringConfig(v: MonitoringConfigValue): Promise<MonitoringConfigView> {
    const r = await this.rest<{ id: string; configuration: MonitoringConfigView }>('put monitoring config', {
      method: 'PUT',
      body: JSON.stringify({ inventoryMonitoringConfiguration: { inventoryMonitoringConfigurationType: 'CERTIFICATE_EXPIRATION', ...v } }),
    });
    return { ...r.configuration, id: r.id };
  }
}
