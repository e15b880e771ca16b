/**
 * The one HTTP layer under every call to the service API (GraphQL, monitoring REST, `POST /v1/events`):
 * base URL joining, the `svc-api-key` header, a per-request timeout, and transport failures as
 * ServiceUnreachableError. What a status means is the caller's business (retry, reject, condition).
 */
import { apiKeyGetter, type ApiKey } from './api-key.js';
import { ServiceUnreachableError } from './errors.js';

const DEFAULT_TIMEOUT_MS = 10_000;

export interface ServiceHttpOptions {
  /** base URL of the service, e.g. http://127.0.0.1:8080 */
  url: string;
  apiKey: ApiKey;
  /** per request; default 10 s */
  timeoutMs?: number | undefined;
  fetch?: typeof fetch | undefined;
}

export interface ServiceRequest {
  method?: string;
  /** a JSON body, already serialised */
  body?: string;
  /** extra request headers (e.g. the monitoring configuration's manager) */
  headers?: Record<string, string>;
  /** aborts the request besides the timeout (e.g. the caller stopping) */
  signal?: AbortSignal | undefined;
}

export interface ServiceResponse {
  status: number;
  headers: Headers;
  /** the body ('' when it could not be read) */
  text: string;
}

export class ServiceHttp {
  readonly apiKey: () => string;
  private readonly base: string;
  private readonly timeoutMs: number;
  private readonly fetchFn: typeof fetch;

  constructor(opts: ServiceHttpOptions) {
    this.apiKey = apiKeyGetter(opts.apiKey);
    this.base = opts.url.replace(/\/$/, '');
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.fetchFn = opts.fetch ?? fetch;
  }

  /** The absolute URL of a path of the API (the base URL's own path, if any, is kept). */
  url(path: string): string {
    return `${this.base}${path}`;
  }

  /**
   * A fetch for libraries that build their own requests (graphql-request): adds the key and the timeout,
   * and turns transport failures into ServiceUnreachableError.
   */
  readonly fetch = (input: string | URL | Request, init: RequestInit = {}): Promise<Response> =>
    this.#send(
      input,
      init,
      init.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(this.timeoutMs)]) : AbortSignal.timeout(this.timeoutMs),
    );

  async #send(input: string | URL | Request, init: RequestInit, signal: AbortSignal): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set('svc-api-key', this.apiKey());
    try {
      return await this.fetchFn(input, { ...init, headers, signal });
    } catch (e) {
      throw new ServiceUnreachableError(e);
    }
  }

  /** One request to `path`; resolves with any HTTP status, rejects only with ServiceUnreachableError. */
  async request(path: string, req: ServiceRequest = {}): Promise<ServiceResponse> {
    // A timer cleared once the body is read, not AbortSignal.timeout: that one keeps the request's signals (and
    // what listens to them) for the whole timeout, garbage the young generation promotes (docs/performance.md).
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(new DOMException(`no answer within ${this.timeoutMs} ms`, 'TimeoutError')), this.timeoutMs);
    timer.unref();
    const onAbort = (): void => ac.abort(req.signal?.reason);
    if (req.signal?.aborted) onAbort();
    else req.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await this.#send(
        this.url(path),
        {
          method: req.method ?? (req.body !== undefined ? 'POST' : 'GET'),
          // spreads: a header's undefined value would be sent as the text, and RequestInit takes no undefined body
          headers: {
            accept: 'application/json',
            ...(req.body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...req.headers,
          },
          ...(req.body !== undefined ? { body: req.body } : {}),
        },
        ac.signal,
      );
      const text = await res.text().catch(() => '');
      return { status: res.status, headers: res.headers, text };
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** JSON.parse that yields undefined for an empty or non-JSON body. */
export function parseJson(text: string): unknown {
  try {
    return text ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    return undefined;
  }
}
