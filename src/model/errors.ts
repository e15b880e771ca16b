/** Errors the API layers turn into GraphQL `extensions.code` or REST `{errors:[{code,message,field}]}`. */
export type ErrorCode =
  | 'BAD_USER_INPUT'
  | 'INVALID_FILTER_EXPRESSION'
  /** A notification template part that does not compile (details: line, column). */
  | 'INVALID_TEMPLATE'
  | 'NOT_FOUND'
  | 'CONFLICT'
  /** A per-company quota (routers, integrations) or a list-size cap was reached. */
  | 'QUOTA_EXCEEDED'
  /** An EMAIL integration on a service started without a usable --smtp-url: every email would be dead. */
  | 'SMTP_NOT_CONFIGURED'
  | 'UNAUTHENTICATED'
  /** The company has as many store calls running and waiting as it may (src/store/concurrency.ts): retry later. */
  | 'TOO_MANY_REQUESTS';

export interface FieldError {
  code: ErrorCode;
  message: string;
  field?: string;
}

export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly details: Record<string, unknown> | undefined;
  constructor(code: ErrorCode, message: string, field?: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'ServiceError';
    this.code = code;
    this.field = field;
    this.details = details;
  }
}

/** Several input problems reported at once (REST returns them all). */
export class ValidationErrors extends Error {
  readonly errors: FieldError[];
  constructor(errors: FieldError[]) {
    super(errors.map((e) => (e.field ? `${e.field}: ${e.message}` : e.message)).join('; '));
    this.name = 'ValidationErrors';
    this.errors = errors;
  }
}

export const badInput = (field: string, message: string) => new ServiceError('BAD_USER_INPUT', message, field);
