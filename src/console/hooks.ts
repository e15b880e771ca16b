import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { Api } from './api.js';

export interface QueryState<T> {
  data?: T | undefined;
  error?: Error | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs `query` when `variables` change (compared as JSON) and on reload(). An answer that arrives after a newer
 * request started is dropped, so a slow old answer never overwrites a newer one.
 */
export function useQuery<T>(api: Api, query: string, variables: Record<string, unknown> = {}): QueryState<T> {
  const [state, setState] = useState<Omit<QueryState<T>, 'reload'>>({ loading: true });
  const [tick, setTick] = useState(0);
  const seq = useRef(0);
  const vars = JSON.stringify(variables);
  useEffect(() => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    api<T>(query, JSON.parse(vars) as Record<string, unknown>).then(
      (data) => mine === seq.current && setState({ data, loading: false }),
      (error: unknown) => mine === seq.current && setState((s) => ({ data: s.data, error: asError(error), loading: false })),
    );
  }, [api, query, vars, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

/** A value that follows `value` once it has stopped changing for `ms` (the CEL editor's validation). */
export function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}

/** A mutation's state: run(fn) records pending / error / a result message. */
export function useAction(): {
  pending: boolean;
  error: Error | undefined;
  run: <T>(fn: () => Promise<T>) => Promise<T | undefined>;
  clear: () => void;
} {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<Error | undefined>();
  const run = useCallback(async <T>(fn: () => Promise<T>) => {
    setPending(true);
    setError(undefined);
    try {
      return await fn();
    } catch (e) {
      setError(asError(e));
      return undefined;
    } finally {
      setPending(false);
    }
  }, []);
  return { pending, error, run, clear: () => setError(undefined) };
}
