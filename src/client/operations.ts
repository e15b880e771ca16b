/**
 * The spec's GraphQL operations, verbatim (operation names, fields, arguments, selections).
 * Used by the operator's client and by the tests, and listed in docs/api.md.
 */
export const GetIntegrationsListData = /* GraphQL */ `
  query GetIntegrationsListData {
    integrations {
      nodes {
        id
        name
        enabled
      }
    }
  }
`;

export const CreateIncidentMgmtIntegration = /* GraphQL */ `
  mutation createIncidentMgmtIntegration($name: String!, $integrationKey: String!) {
    createIncidentMgmtIntegration(input: { name: $name, incidentMgmtParams: { IntegrationKey: $integrationKey } }) {
      id
    }
  }
`;

export const DeleteIntegrations = /* GraphQL */ `
  mutation DeleteIntegrations($ids: [UUID!]!) {
    deleteIntegrations(ids: $ids) {
      ids
    }
  }
`;

export const SearchNotificationRoutingConfigurations = /* GraphQL */ `
  query SearchNotificationRoutingConfigurations {
    searchNotificationRoutingConfigurations {
      nodes {
        id
        name
        eventType {
          id
          displayName
        }
        enabled
        notificationRouterFilterConfig {
          advancedFilterExpression
        }
      }
    }
  }
`;

export const CreateNotificationRouter = /* GraphQL */ `
  mutation CreateNotificationRouter(
    $details: NotificationRouterConfigDetailsInput!
    $filterConfig: NotificationRouterFilterConfigInput!
    $integrationConfig: NotificationRouterIntegrationConfigurationInput!
    $policyConfig: NotificationRouterPolicyInput
  ) {
    createNotificationRouter(
      details: $details
      filterConfig: $filterConfig
      integrationConfig: $integrationConfig
      policyConfig: $policyConfig
    ) {
      id
      notificationRouterIntegrationConfig {
        notificationRouterIntegrationID
        notificationRouterTemplateID
      }
      notificationRouterFilterConfig {
        advancedFilterExpression
      }
    }
  }
`;

export const UpdateNotificationRouter = /* GraphQL */ `
  mutation UpdateNotificationRouter(
    $updateNotificationRouterId: UUID!
    $updateNotificationRouterConfigurationInput: UpdateNotificationRouterConfigurationInput!
  ) {
    updateNotificationRouter(
      id: $updateNotificationRouterId
      updateNotificationRouterConfigurationInput: $updateNotificationRouterConfigurationInput
    ) {
      id
      enabled
    }
  }
`;

/** The older generation's update (same operationName in the spec). */
export const UpdateNotificationRoutingConfiguration = /* GraphQL */ `
  mutation UpdateNotificationRouter($id: UUID!, $enabled: Boolean) {
    updateNotificationRoutingConfiguration(id: $id, enabled: $enabled) {
      id
      enabled
    }
  }
`;

export const DeleteNotificationRouter = /* GraphQL */ `
  mutation DeleteNotificationRouter($ids: [UUID!]) {
    deleteNotificationRouter(ids: $ids) {
      ids
    }
  }
`;

/** The older generation's create (designed here; the spec names it without arguments). */
export const CreateNotificationRoutingConfiguration = /* GraphQL */ `
  mutation CreateNotificationRoutingConfiguration(
    $name: String!
    $eventTypeId: String!
    $integrationId: UUID!
    $advancedFilterExpression: String
    $enabled: Boolean
  ) {
    createNotificationRoutingConfiguration(
      name: $name
      eventTypeId: $eventTypeId
      integrationId: $integrationId
      advancedFilterExpression: $advancedFilterExpression
      enabled: $enabled
    ) {
      id
      enabled
    }
  }
`;

export const MONITORING_CONFIG_PATH = '/outagedetection/v1/inventorymonitoringconfig/CERTIFICATE_EXPIRATION';
