/**
 * The console's only way to the hub: POST /graphql (same origin, the same API every client uses), with the key
 * in the `svc-api-key` header (src/http/auth.ts). Never in the URL.
 */
const API_KEY_HEADER = 'svc-api-key';

/** A GraphQL or HTTP error: the hub's message and its extensions.code (BAD_USER_INPUT, UNAUTHENTICATED, …). */
class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly status: number,
    readonly extensions: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export type Api = <T>(query: string, variables?: Record<string, unknown>) => Promise<T>;

interface GraphqlBody {
  data?: unknown;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
}

export function apiFor(key: string, onUnauthenticated: () => void): Api {
  return async <T>(query: string, variables: Record<string, unknown> = {}): Promise<T> => {
    const res = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', [API_KEY_HEADER]: key },
      body: JSON.stringify({ query, variables }),
      credentials: 'omit',
      cache: 'no-store',
    });
    let body: GraphqlBody | undefined;
    try {
      body = (await res.json()) as GraphqlBody;
    } catch {
      body = undefined;
    }
    const first = body?.errors?.[0];
    if (first) {
      const code = typeof first.extensions?.code === 'string' ? first.extensions.code : undefined;
      if (res.status === 401 || code === 'UNAUTHENTICATED') onUnauthenticated();
      throw new ApiError(first.message, code, res.status, first.extensions);
    }
    if (!res.ok || body?.data === undefined || body.data === null) {
      if (res.status === 401) onUnauthenticated();
      throw new ApiError(`the hub answered HTTP ${res.status}`, undefined, res.status);
    }
    return body.data as T;
  };
}
