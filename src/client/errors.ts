/**
 * How the client reports a failed call to the service, one way for every caller: a transport failure
 * (`ServiceUnreachableError`), the service's `{ errors: [...] }` body, and the operator's `ServiceApiError` kinds.
 * No message ever carries request data: graphql-request's ClientError embeds the variables (secrets), so it is
 * mapped here and never logged or rethrown.
 */
import { ClientError } from 'graphql-request';

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

/** The request never got an HTTP response (network error, timeout, abort). */
export class ServiceUnreachableError extends Error {
  /** the per-request timeout fired */
  readonly timedOut: boolean;
  /** the system error code (ECONNREFUSED, …) when there is one */
  readonly code: string | undefined;
  /** the most specific text: the cause's code or message, else the error's message */
  readonly detail: string;

  constructor(e: unknown) {
    const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } } | null;
    super(err?.message ?? String(e));
    this.name = 'ServiceUnreachableError';
    this.timedOut = err?.name === 'TimeoutError';
    this.code = err?.cause?.code;
    this.detail = err?.cause?.code ?? err?.cause?.message ?? err?.message ?? String(e);
  }

  static of(e: unknown): ServiceUnreachableError {
    return e instanceof ServiceUnreachableError ? e : new ServiceUnreachableError(e);
  }
}

export interface ErrorEntry {
  code?: string;
  message?: string;
  field?: string;
}

/** The `errors` of a service error body (REST and `POST /v1/events`); [] when the body is not one. */
export function errorEntries(text: string): ErrorEntry[] {
  try {
    const errors = (JSON.parse(text) as { errors?: unknown } | null)?.errors;
    return Array.isArray(errors) ? (errors as ErrorEntry[]) : [];
  } catch {
    return [];
  }
}

/** The kind of a REST error status. */
export function kindOfStatus(status: number): ServiceErrorKind {
  if (status >= 500) return 'unavailable';
  if (status === 401) return 'unauthenticated';
  if (status === 404) return 'not-found';
  if (status === 400) return 'bad-input';
  return 'other';
}

const KIND_BY_CODE: Record<string, ServiceErrorKind> = {
  UNAUTHENTICATED: 'unauthenticated',
  INVALID_FILTER_EXPRESSION: 'invalid-filter',
  BAD_USER_INPUT: 'bad-input',
  INVALID_TEMPLATE: 'bad-input',
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
    const kind: ServiceErrorKind = code
      ? (KIND_BY_CODE[code] ?? 'other')
      : status >= 500 || status === 0
        ? 'unavailable'
        : status === 401
          ? 'unauthenticated'
          : 'other';
    const { code: _c, ...ext } = (first?.extensions ?? {}) as Record<string, unknown>;
    void _c;
    const serviceMessage = first?.message ?? `HTTP ${status}`;
    return new ServiceApiError(
      kind,
      `${what}: ${serviceMessage}${code ? ` (${code})` : ''}`,
      { ...ext, code: code || undefined, status },
      serviceMessage,
    );
  }
  const u = ServiceUnreachableError.of(e);
  return new ServiceApiError(
    'unavailable',
    `${what}: service unreachable: ${u.timedOut ? 'timed out' : u.message}${u.code ? ` (${u.code})` : ''}`,
  );
}
