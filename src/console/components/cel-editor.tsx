import { useEffect, useRef, useState } from 'preact/hooks';
import type { Api } from '../api.js';
import { caretMarker } from '../caret.js';
import { asError, useDebounced } from '../hooks.js';

export interface FilterValidation {
  valid: boolean;
  error: string | null;
  line: number | null;
  column: number | null;
}

const VALIDATE = `query ValidateFilter($eventTypeId: String!, $expression: String!) {
  validateFilter(eventTypeId: $eventTypeId, expression: $expression) { valid error line column }
}`;

/**
 * A CEL filter textarea that the hub validates as you type (validateFilter, 400 ms after the last keystroke, the
 * same checks createNotificationRouter runs), showing the error with its line, column and a caret under it.
 * `onValidity` gets true/false once the hub has answered for the current text, undefined while it is pending.
 */
export function CelEditor({
  api,
  id,
  label,
  eventTypeId,
  value,
  onChange,
  onValidity,
}: {
  api: Api;
  id: string;
  label: string;
  eventTypeId: string;
  value: string;
  onChange: (v: string) => void;
  onValidity: (valid: boolean | undefined) => void;
}) {
  const settled = useDebounced(value, 400);
  const [result, setResult] = useState<{ for: string; v: FilterValidation } | undefined>();
  const [failure, setFailure] = useState<Error | undefined>();
  const seq = useRef(0);
  const key = `${eventTypeId}\n${settled}`;

  useEffect(() => {
    const mine = ++seq.current;
    if (settled.trim() === '' || eventTypeId === '') {
      setResult({ for: key, v: { valid: true, error: null, line: null, column: null } });
      return;
    }
    api<{ validateFilter: FilterValidation }>(VALIDATE, { eventTypeId, expression: settled }).then(
      (r) => {
        if (mine !== seq.current) return;
        setFailure(undefined);
        setResult({ for: key, v: r.validateFilter });
      },
      (e: unknown) => mine === seq.current && setFailure(asError(e)),
    );
  }, [api, key]);

  const current = result && result.for === `${eventTypeId}\n${value}` ? result.v : undefined;
  useEffect(() => onValidity(current?.valid), [current?.valid, onValidity]);

  const marker =
    current && !current.valid ? caretMarker(result?.for.slice(eventTypeId.length + 1) ?? '', current.line, current.column) : null;
  const status = current === undefined ? 'checking…' : current.valid ? 'valid' : 'invalid';
  return (
    <div class="cel-editor">
      <label for={id}>{label}</label>
      <textarea
        id={id}
        name={id}
        class="code"
        rows={4}
        spellcheck={false}
        value={value}
        onInput={(e) => onChange(e.currentTarget.value)}
        aria-invalid={current ? (current.valid ? 'false' : 'true') : undefined}
        aria-describedby={`${id}-status`}
        placeholder='e.g. data.namespace == "prod" && type.endsWith(".notready")'
      />
      <div id={`${id}-status`} aria-live="polite" class="cel-status">
        {failure ? (
          <small role="alert">Could not validate: {failure.message}</small>
        ) : current && !current.valid ? (
          <div class="cel-error" data-testid="filter-error">
            <small>
              {current.line !== null && current.column !== null ? `Line ${current.line}, column ${current.column}: ` : ''}
              {current.error}
            </small>
            {marker && (
              <pre aria-hidden="true">
                {marker.text}
                {'\n'}
                {marker.marker}
              </pre>
            )}
          </div>
        ) : (
          <small class={`cel-${status === 'valid' ? 'ok' : 'pending'}`}>
            Filter {value.trim() === '' ? 'empty: matches every event of the family' : status}
          </small>
        )}
      </div>
    </div>
  );
}
