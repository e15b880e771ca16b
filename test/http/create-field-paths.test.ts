/**
 * A refused create mutation names the field as the client sent it, for every integration type: the field path of
 * the error resolves in the mutation's input type of the spec's SDL (WEBHOOK's flat input: input.url, not a
 * params block the client never sent). One refusal per parameter of each type's descriptor.
 */
import { getNamedType, isInputObjectType, isListType, getNullableType, type GraphQLInputType } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApiSchema } from '../../src/http/graphql/schema.js';
import { INTEGRATIONS } from '../../src/integrations/registry.js';
import type { ParamField, ParamKind } from '../../src/integrations/types.js';
import { gqlError } from '../support/graphql.js';
import { COMPANY_A, startTestService, type TestService } from '../support/service.js';

const schema = buildApiSchema();

/** The input type of `mutation.input`, from the SDL. */
function createInputType(mutation: string): GraphQLInputType {
  const field = schema.getMutationType()!.getFields()[mutation];
  expect(field, mutation).toBeDefined();
  return field!.args.find((a) => a.name === 'input')!.type;
}

/** Whether `path` (`input.a.b[0].c`) names a field of `type` (its first segment being the argument `input`). */
function pathInSdl(type: GraphQLInputType, path: string): boolean {
  const [head, ...rest] = path.split('.');
  if (head !== 'input') return false;
  let t: GraphQLInputType = type;
  for (const seg of rest) {
    const m = /^([A-Za-z_]\w*)((?:\[\d+\])*)$/.exec(seg);
    if (!m) return false;
    const named = getNamedType(t);
    if (!isInputObjectType(named)) return false;
    const f = named.getFields()[m[1]!];
    if (!f) return false;
    t = f.type;
    for (let i = 0; i < (m[2]!.match(/\[/g) ?? []).length; i++) {
      const inner = getNullableType(t);
      if (!isListType(inner)) return false;
      t = inner.ofType as GraphQLInputType;
    }
  }
  return true;
}

const WHSEC = 'whsec_' + Buffer.from('0123456789abcdef0123').toString('base64');
const GOOD: Record<ParamKind, unknown> = {
  secret: 'k-0123456789abcdef-0123',
  destination: 'https://hooks.example.com/in',
  signingSecret: WHSEC,
  email: 'ops@example.com',
  emails: ['ops@example.com'],
  sender: 'certs@example.com',
  headers: [{ name: 'X-Team', value: 'sre' }],
};
/** A refused value of each kind, and the sub-path its error names below the field. */
const BAD: Record<ParamKind, [unknown, string]> = {
  secret: ['', ''],
  destination: ['not a url', ''],
  signingSecret: ['short', ''],
  email: ['not an email', ''],
  emails: [['ops@example.com', 'not an email'], '[1]'],
  sender: ['payments@bank.test', ''],
  headers: [[{ name: 'X Bad', value: 'v' }], '[0].name'],
};

const cases = Object.values(INTEGRATIONS).flatMap((d) =>
  d.params.map((f: ParamField) => {
    const params = Object.fromEntries(d.params.filter((p) => p.required).map((p) => [p.input, GOOD[p.kind]]));
    params[f.input] = BAD[f.kind][0];
    const base = d.api.flatCreateInput ? 'input' : `input.${d.api.paramsField}`;
    const input = { name: `${d.type} refused`, ...(d.api.flatCreateInput ? params : { [d.api.paramsField]: params }) };
    return {
      label: `${d.api.createMutation} ${f.input}`,
      mutation: d.api.createMutation,
      input,
      field: `${base}.${f.input}${BAD[f.kind][1]}`,
    };
  }),
);

describe('create mutations name the refused field as sent', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService('sqlite', [], { loopbackAllowed: false });
  });
  afterAll(() => svc?.close());

  it('covers every type', () => {
    expect(new Set(cases.map((c) => c.mutation)).size).toBe(Object.keys(INTEGRATIONS).length);
  });

  it.each(cases)('$label: $field', async ({ mutation, input, field }) => {
    const type = createInputType(mutation);
    expect(pathInSdl(type, field), `${field} in ${String(type)}`).toBe(true);
    const e = await gqlError(svc.gql().request(`mutation($i: ${String(type)}) { ${mutation}(input: $i) { id } }`, { i: input }));
    expect(e.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field });
    expect(e.message).toContain(field);
    expect(await svc.store.listIntegrations(COMPANY_A)).toEqual([]);
  });

  it('the SDL walk itself refuses a path the client never sent', () => {
    expect(pathInSdl(createInputType('createWebhookIntegration'), 'input.webhookParams.url')).toBe(false);
    expect(pathInSdl(createInputType('createWebhookIntegration'), 'input.url')).toBe(true);
    expect(pathInSdl(createInputType('createEmailIntegration'), 'input.emailParams.to[0]')).toBe(true);
    expect(pathInSdl(createInputType('createEmailIntegration'), 'input.emailParams.from[0]')).toBe(false);
  });
});
