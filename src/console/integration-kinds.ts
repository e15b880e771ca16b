/**
 * The integration types the console can create, their form fields and the GraphQL create mutation of each,
 * derived from the types' table (src/model/integration-types.ts). Pure (unit-tested in
 * test/console/integration-kinds.test.ts).
 */
import { INTEGRATION_META, INTEGRATION_TYPES, type IntegrationType, type ParamField } from '../model/integration-types.js';

export interface KindField {
  /** the form value's name: the parameter's stored key */
  name: string;
  label: string;
  /** write-only secrets are typed into password inputs */
  secret: boolean;
  optional: boolean;
  multiline: boolean;
  hint?: string | undefined;
}

export interface IntegrationKind {
  type: IntegrationType;
  label: string;
  fields: KindField[];
}

const fieldOf = (p: ParamField): KindField => ({
  name: p.key,
  label: p.label,
  // a headers field is a multi-line text, never a password input, whatever holds it
  secret: p.kind !== 'headers' && p.into === 'secrets',
  optional: !p.required,
  multiline: p.kind === 'headers',
  hint: p.hint,
});

export const INTEGRATION_KINDS: IntegrationKind[] = INTEGRATION_TYPES.map((type) => ({
  type,
  label: INTEGRATION_META[type].label,
  fields: INTEGRATION_META[type].params.map(fieldOf),
}));

export interface MutationCall {
  mutation: string;
  variables: Record<string, unknown>;
}

const SELECTION = '{ id name type enabled }';

/** "Name: value" lines → [{name, value}]; an empty line is skipped, a line without a colon is an error naming it. */
export function parseHeaders(text: string): { name: string; value: string }[] {
  return text
    .split('\n')
    .map((l, i) => [l.trim(), i + 1] as const)
    .filter(([l]) => l !== '')
    .map(([l, n]) => {
      const c = l.indexOf(':');
      if (c <= 0) throw new Error(`extra headers, line ${n}: write "Name: value"`);
      return { name: l.slice(0, c).trim(), value: l.slice(c + 1).trim() };
    });
}

const opt = (v: string | undefined) => (v && v.trim() !== '' ? v.trim() : undefined);

/** A form value as the API takes it: a list for `emails` and `headers`; an empty optional value left out. */
function paramValue(p: ParamField, text: string | undefined): unknown {
  if (p.kind === 'emails')
    return (text ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  if (p.kind === 'headers') {
    const headers = parseHeaders(text ?? '');
    return headers.length ? headers : undefined;
  }
  return p.required ? (text ?? '') : opt(text);
}

/** The form values of the integration's own send rate (every type has them). */
export const RATE_FIELDS = { perSecond: 'rateLimit.perSecond', burst: 'rateLimit.burst' } as const;

/**
 * The rate fields as the API takes them: empty sends per second leaves the type's default; 0 is unlimited; an empty
 * burst is the service's default (one second's worth). Text that is not a number is an error naming the field.
 */
export function rateLimitValue(
  perSecond: string | undefined,
  burst: string | undefined,
): { perSecond: number; burst?: number } | undefined {
  const ps = opt(perSecond);
  if (ps === undefined) return undefined;
  const n = Number(ps);
  if (!Number.isFinite(n) || n < 0)
    throw new Error(`rate limit: sends per second must be a number, 0 for unlimited (got "${ps.slice(0, 20)}")`);
  const b = opt(burst);
  if (b === undefined) return { perSecond: n };
  const m = Number(b);
  if (!Number.isInteger(m) || m < 1) throw new Error(`rate limit: burst must be a whole number of at least 1 (got "${b.slice(0, 20)}")`);
  return { perSecond: n, burst: m };
}

/** How the list shows an integration's rate. */
export function formatRateLimit(r: { perSecond: number; burst: number; typeDefault: boolean } | null | undefined): string {
  if (!r) return '';
  const text = r.perSecond === 0 ? 'unlimited' : `${r.perSecond}/s, burst ${r.burst}`;
  return r.typeDefault ? `${text} (type default)` : text;
}

/** The create mutation for `type` with the form's values (empty optional fields left out). */
export function createIntegrationCall(type: string, name: string, v: Record<string, string>): MutationCall {
  if (!(INTEGRATION_TYPES as readonly string[]).includes(type)) throw new Error(`unknown integration type ${type}`);
  const { api, params } = INTEGRATION_META[type as IntegrationType];
  const mutation = `${api.createMutation.charAt(0).toUpperCase()}${api.createMutation.slice(1)}`;
  const values: Record<string, unknown> = {};
  for (const p of params) {
    const value = paramValue(p, v[p.key]);
    if (value !== undefined) values[p.input] = value;
  }
  const rateLimit = rateLimitValue(v[RATE_FIELDS.perSecond], v[RATE_FIELDS.burst]);
  const own = rateLimit ? { rateLimit } : {};
  return {
    mutation: `mutation Create($input: ${mutation}Input!) { ${api.createMutation}(input: $input) ${SELECTION} }`,
    variables: { input: api.flatCreateInput ? { name, ...values, ...own } : { name, [api.paramsField]: values, ...own } },
  };
}
