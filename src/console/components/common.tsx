import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';

/** An error the user must see: announced by screen readers (role=alert). */
export function ErrorNote({ error }: { error: Error | undefined }) {
  if (!error) return null;
  return (
    <p role="alert" class="error-note">
      {error.message}
    </p>
  );
}

export function Loading({ loading }: { loading: boolean }) {
  return loading ? <p aria-busy="true">Loading…</p> : null;
}

/** A status word with a colour class; the word itself carries the meaning (not only the colour). */
export function Tag({ value }: { value: string }) {
  return <span class={`tag tag-${value.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`}>{value}</span>;
}

export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <header class="page-header">
      <h1>{title}</h1>
      {children}
    </header>
  );
}

/** An empty table says so instead of showing only headers. */
export function Empty({ when, children }: { when: boolean; children: ComponentChildren }) {
  return when ? <p class="empty">{children}</p> : null;
}

/** A list as a table: one header per column (`false` leaves a column out, e.g. actions for a read-only key). */
export function DataTable({ headers, children }: { headers: readonly (string | false)[]; children: ComponentChildren }) {
  return (
    <div class="overflow-auto">
      <table class="striped">
        <thead>
          <tr>
            {headers.map((h) =>
              h === false ? null : (
                <th scope="col" key={h}>
                  {h}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** One choice of a SelectField: a bare string is both its value and its label. */
export type SelectOption<T extends string = string> = T | { value: T; label: string; disabled?: boolean };

/**
 * A labelled drop-down. The label names the select through for/id, so its accessible name is the label alone (not
 * the options' text too, as with a wrapping label); the block keeps both in one cell of a grid.
 */
export function SelectField<T extends string>({
  label,
  name,
  value,
  options,
  onChange,
  required = false,
}: {
  label: string;
  name: string;
  value: T;
  options: readonly SelectOption<T>[];
  /** The chosen option's value: one of `options`. */
  onChange: (value: T) => void;
  required?: boolean;
}) {
  const id = useId();
  return (
    <div>
      <label for={id}>{label}</label>
      <select id={id} name={name} required={required} value={value} onChange={(e) => onChange(e.currentTarget.value as T)}>
        {options.map((o) => {
          const { value: v, label: text, disabled = false } = typeof o === 'string' ? { value: o, label: o, disabled: false } : o;
          return (
            <option key={v} value={v} disabled={disabled}>
              {text}
            </option>
          );
        })}
      </select>
    </div>
  );
}
