import type { ComponentChildren } from 'preact';

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
