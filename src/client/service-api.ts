/**
 * The operator's way into the service: the GraphQL API (graphql-request over the client's ServiceHttp) and the
 * monitoring REST configuration (monitoring.ts). Works the same against the in-process service and a remote one.
 * The spec's operations (operations.ts) are used where they fit; the extra selections the operator needs
 * (managedBy, type, generation) are below. Errors become ServiceApiError (errors.ts) with the service's own
 * message only.
 */
import * as silences from './silences.js';
import type { SilenceInput, SilenceView } from './silences.js';
import { GraphQLClient } from 'graphql-request';
import { INTEGRATION_META } from '../model/integration-types.js';
import type { MonitoringConfigInput } from '../model/monitoring.js';
import type { IntegrationType, RouterGeneration } from '../store/types.js';
import { TEMPLATE_PART_KEYS } from '../model/records.js';
import { ServiceApiError, toServiceError } from './errors.js';
import type { ApiKey } from './api-key.js';
import { ServiceHttp } from './http.js';
import { getMonitoringConfig, putMonitoringConfig, type MonitoringConfigView, type MonitoringWriteOptions } from './monitoring.js';
import { CreateNotificationRouter, DeleteIntegrations, DeleteNotificationRouter, UpdateNotificationRouter } from './operations.js';

export interface IntegrationView {
  id: string;
  name: string;
  enabled: boolean;
  type: IntegrationType;
  emailTo: string[] | null;
  emailFrom: string | null;
  webhookSigned: boolean | null;
  managedBy: string | null;
  /** The rate that applies and whether it is the type's default (absent: a service that does not say). */
  rateLimit?: { perSecond: number; burst: number; typeDefault: boolean };
}

/** An integration's own send rate as the API takes it; null: the type's default. */
export interface RateLimitInput {
  perSecond: number;
  burst: number;
}

/** A router's grouping and reminders as the API writes them (intervals normalized, e.g. "5m"). */
export interface RouterPolicyView {
  groupBy: string[];
  groupWait: string;
  groupInterval: string;
  repeatInterval: string | null;
  /** absent: false */
  holdUnderIssuer?: boolean;
}

export interface RouterView {
  policy: RouterPolicyView;
  id: string;
  name: string;
  enabled: boolean;
  eventTypeId: string;
  filter: string;
  integrationId: string;
  /** the router's notification template, or null (absent: none) */
  templateId?: string | null | undefined;
  generation: RouterGeneration;
  managedBy: string | null;
}

/** Type-specific parameters, as updateIntegration takes them (secrets included: never log this). */
export type IntegrationParams =
  | { incidentMgmtParams: { IntegrationKey: string } }
  | { webhookParams: { url: string; signingSecret?: string | undefined } }
  | { emailParams: { to: string[]; from?: string | undefined } }
  | { slackParams: { webhookUrl: string } }
  | { teamsParams: { webhookUrl: string } }
  | { opsgenieParams: { apiKey: string } }
  | { googleChatParams: { webhookUrl: string } }
  | { discordParams: { webhookUrl: string } }
  | {
      genericWebhookParams: {
        url: string;
        signingSecret?: string | undefined;
        headers?: Array<{ name: string; value: string }> | undefined;
      };
    }
  | {
      alertmanagerParams: { url: string; bearerToken?: string | undefined; username?: string | undefined; password?: string | undefined };
    };

export interface CreateIntegrationInput {
  type: IntegrationType;
  name: string;
  enabled: boolean;
  managedBy: string;
  params: IntegrationParams;
  /** absent or null: the type's default */
  rateLimit?: RateLimitInput | null;
}

export interface UpdateIntegrationInput {
  name?: string;
  enabled?: boolean;
  managedBy?: string;
  params?: IntegrationParams;
  /** null: back to the type's default */
  rateLimit?: RateLimitInput | null;
}

export interface RouterInput {
  policy: RouterPolicyView;
  name: string;
  eventTypeId: string;
  filter: string;
  integrationId: string;
  /** null or absent: no template */
  templateId?: string | null | undefined;
  enabled: boolean;
  managedBy: string;
}

/** A notification template's parts as the API takes and returns them (absent fields and parts: null). */
export type TemplatePartsView = Record<string, { title?: string | null; text?: string | null; body?: string | null } | null>;

export interface TemplateView {
  id: string;
  name: string;
  parts: TemplatePartsView;
  managedBy: string | null;
}

export interface TemplateInput {
  name: string;
  parts: TemplatePartsView;
  managedBy: string;
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
  listTemplates(): Promise<TemplateView[]>;
  createTemplate(input: TemplateInput): Promise<{ id: string }>;
  updateTemplate(id: string, input: Partial<TemplateInput>): Promise<void>;
  /** Deleting an unknown one is not an error; a template still used by routers is (kind 'conflict'). */
  deleteTemplate(id: string): Promise<void>;
  getMonitoringConfig(): Promise<MonitoringConfigView>;
  /** `opts.manager`: write as that manager of record (another one's record is refused: kind 'conflict') */
  putMonitoringConfig(v: MonitoringConfigInput, opts?: MonitoringWriteOptions): Promise<MonitoringConfigView>;
  /** Silences not ended (pending and active). */
  listSilences(): Promise<SilenceView[]>;
  createSilence(input: SilenceInput): Promise<SilenceView>;
  updateSilence(id: string, input: Partial<SilenceInput>): Promise<SilenceView>;
  /** Ends it now; a silence already gone is not an error. */
  expireSilence(id: string): Promise<void>;
}

const INTEGRATION_FIELDS = 'id name enabled type emailTo emailFrom webhookSigned managedBy rateLimit { perSecond burst typeDefault }';

const ListIntegrations = /* GraphQL */ `
  query OperatorListIntegrations { integrations { nodes { ${INTEGRATION_FIELDS} } } }
`;
const ListRouters = /* GraphQL */ `
  query OperatorListRouters {
    searchNotificationRoutingConfigurations {
      nodes {
        id
        name
        enabled
        generation
        managedBy
        eventType {
          id
        }
        notificationRouterFilterConfig {
          advancedFilterExpression
        }
        notificationRouterIntegrationConfig {
          notificationRouterIntegrationID
          notificationRouterTemplateID
        }
        notificationRouterPolicyConfig {
          groupBy
          groupWait
          groupInterval
          repeatInterval
          holdUnderIssuer
        }
      }
    }
  }
`;
const TEMPLATE_PART_FIELDS = `${TEMPLATE_PART_KEYS.map((k) => `${k} { title text body }`).join(' ')}`;
const TEMPLATE_FIELDS = `id name managedBy parts { ${TEMPLATE_PART_FIELDS} }`;
const ListTemplates = `query OperatorListTemplates { notificationTemplates { nodes { ${TEMPLATE_FIELDS} } } }`;
const CreateTemplate = `mutation OperatorCreateTemplate($input: CreateNotificationTemplateInput!) { createNotificationTemplate(input: $input) { id } }`;
const UpdateTemplate = `mutation OperatorUpdateTemplate($id: UUID!, $input: UpdateNotificationTemplateInput!) { updateNotificationTemplate(id: $id, input: $input) { id } }`;
const DeleteTemplates = `mutation OperatorDeleteTemplates($ids: [UUID!]!) { deleteNotificationTemplates(ids: $ids) { ids } }`;

/** The create mutation of a type and its input type (`createXIntegration(input: CreateXIntegrationInput!)`). */
export function createMutationOf(t: IntegrationType): { field: string; inputType: string } {
  const field = INTEGRATION_META[t].api.createMutation;
  return { field, inputType: `${field.charAt(0).toUpperCase()}${field.slice(1)}Input` };
}
const createIntegrationDoc = (t: IntegrationType): string => {
  const m = createMutationOf(t);
  return `mutation OperatorCreateIntegration($input: ${m.inputType}!) { ${m.field}(input: $input) { ${INTEGRATION_FIELDS} } }`;
};
const UpdateIntegration = /* GraphQL */ `
  mutation OperatorUpdateIntegration($id: UUID!, $input: UpdateIntegrationInput!) {
    updateIntegration(id: $id, input: $input) { ${INTEGRATION_FIELDS} }
  }
`;

/**
 * The create input of one type: a type whose create mutation is flat (api.flatCreateInput: WEBHOOK, ALERTMANAGER)
 * takes its params' fields at the top level, empty ones left out; the others a params block.
 */
export function createIntegrationVariables(input: CreateIntegrationInput): Record<string, unknown> {
  const base: Record<string, unknown> = { name: input.name, enabled: input.enabled, managedBy: input.managedBy };
  // no rate (undefined or null): left out of the input, so the type's default applies
  if (input.rateLimit) base['rateLimit'] = input.rateLimit;
  const { api } = INTEGRATION_META[input.type];
  if (!api.flatCreateInput) return { ...base, ...input.params };
  const fields = (input.params as Record<string, Record<string, unknown> | undefined>)[api.paramsField] ?? {};
  return { ...base, ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined && v !== '')) };
}

interface RawRouter {
  id: string;
  name: string;
  enabled: boolean;
  generation: RouterView['generation'];
  managedBy: string | null;
  eventType: { id: string };
  notificationRouterFilterConfig: { advancedFilterExpression: string | null };
  notificationRouterIntegrationConfig: { notificationRouterIntegrationID: string; notificationRouterTemplateID: string | null };
  notificationRouterPolicyConfig: RouterPolicyView;
}

const routerView = (r: RawRouter): RouterView => ({
  id: r.id,
  name: r.name,
  enabled: r.enabled,
  eventTypeId: r.eventType.id,
  filter: r.notificationRouterFilterConfig.advancedFilterExpression ?? '',
  integrationId: r.notificationRouterIntegrationConfig.notificationRouterIntegrationID,
  templateId: r.notificationRouterIntegrationConfig.notificationRouterTemplateID,
  generation: r.generation,
  managedBy: r.managedBy,
  policy: r.notificationRouterPolicyConfig,
});

export interface GraphQLServiceApiOptions {
  /** base URL of the service, e.g. http://127.0.0.1:8080 */
  url: string;
  /** the API key (a function so a rotated key from a Secret is picked up) */
  apiKey: ApiKey;
  timeoutMs?: number | undefined;
}

export class GraphQLServiceApi implements ServiceApi {
  private readonly gql: GraphQLClient;
  private readonly http: ServiceHttp;

  constructor(opts: GraphQLServiceApiOptions) {
    this.http = new ServiceHttp(opts);
    this.gql = new GraphQLClient(this.http.url('/graphql'), { fetch: this.http.fetch });
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
    const m = createMutationOf(input.type);
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
      integrationConfig: { integrationId: input.integrationId, templateId: input.templateId ?? null },
      policyConfig: { ...input.policy, repeatInterval: input.policy.repeatInterval ?? '' },
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
    if (input.templateId !== undefined) u['templateId'] = input.templateId;
    if (input.managedBy !== undefined) u['managedBy'] = input.managedBy;
    // '' turns reminders off (null would mean "left out" to some clients)
    if (input.policy !== undefined) Object.assign(u, input.policy, { repeatInterval: input.policy.repeatInterval ?? '' });
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

  async listTemplates(): Promise<TemplateView[]> {
    const r = await this.request<{ notificationTemplates: { nodes: TemplateView[] } }>('list templates', ListTemplates);
    return r.notificationTemplates.nodes;
  }

  async createTemplate(input: TemplateInput): Promise<{ id: string }> {
    const r = await this.request<{ createNotificationTemplate: { id: string } }>('create template', CreateTemplate, { input });
    return r.createNotificationTemplate;
  }

  async updateTemplate(id: string, input: Partial<TemplateInput>): Promise<void> {
    await this.request('update template', UpdateTemplate, { id, input });
  }

  async deleteTemplate(id: string): Promise<void> {
    try {
      await this.request('delete template', DeleteTemplates, { ids: [id] });
    } catch (e) {
      if (e instanceof ServiceApiError && e.kind === 'not-found') return;
      throw e;
    }
  }

  getMonitoringConfig(): Promise<MonitoringConfigView> {
    return getMonitoringConfig(this.http);
  }

  putMonitoringConfig(v: MonitoringConfigInput, opts?: MonitoringWriteOptions): Promise<MonitoringConfigView> {
    return putMonitoringConfig(this.http, v, opts);
  }

  private readonly req = <T>(what: string, doc: string, variables?: Record<string, unknown>) => this.request<T>(what, doc, variables);
  listSilences(): Promise<SilenceView[]> {
    return silences.listLiveSilences(this.req);
  }
  createSilence(input: SilenceInput): Promise<SilenceView> {
    return silences.createSilence(this.req, input);
  }
  updateSilence(id: string, input: Partial<SilenceInput>): Promise<SilenceView> {
    return silences.updateSilence(this.req, id, input);
  }
  expireSilence(id: string): Promise<void> {
    return silences.expireSilence(this.req, id);
  }
}
