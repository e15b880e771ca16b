/** The service API's silences (docs/silences.md), as the operator reads and writes them. */
import { ServiceApiError } from './errors.js';

export interface SilenceView {
  id: string;
  matcher: string;
  eventTypeId: string | null;
  startsAt: string;
  endsAt: string;
  comment: string;
  createdBy: string;
  managedBy: string | null;
  state: 'PENDING' | 'ACTIVE' | 'EXPIRED';
}

export interface SilenceInput {
  matcher: string;
  eventTypeId: string | null;
  /** RFC 3339; null: now (create only) */
  startsAt: string | null;
  endsAt: string;
  comment: string;
  createdBy: string;
  managedBy: string;
}

const FIELDS = 'id matcher eventTypeId startsAt endsAt comment createdBy managedBy state';

const ListSilences = /* GraphQL */ `
  query OperatorListSilences($state: SilenceState, $after: String) {
    silences(state: $state, first: 500, after: $after) { nodes { ${FIELDS} } pageInfo { hasNextPage endCursor } }
  }
`;
const CreateSilence = /* GraphQL */ `
  mutation OperatorCreateSilence($input: CreateSilenceInput!) { createSilence(input: $input) { ${FIELDS} } }
`;
const UpdateSilence = /* GraphQL */ `
  mutation OperatorUpdateSilence($id: UUID!, $input: UpdateSilenceInput!) { updateSilence(id: $id, input: $input) { ${FIELDS} } }
`;
const ExpireSilence = /* GraphQL */ `
  mutation OperatorExpireSilence($id: UUID!) { expireSilence(id: $id) { ${FIELDS} } }
`;

type Request = <T>(what: string, doc: string, variables?: Record<string, unknown>) => Promise<T>;

/** Pages through the silences not ended (pending and active): at most the company's quota of them. */
export async function listLiveSilences(request: Request): Promise<SilenceView[]> {
  const out: SilenceView[] = [];
  for (const state of ['PENDING', 'ACTIVE'] as const) {
    let after: string | null = null;
    for (;;) {
      const r: { silences: { nodes: SilenceView[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } } = await request(
        'list silences',
        ListSilences,
        { state, after },
      );
      out.push(...r.silences.nodes);
      if (!r.silences.pageInfo.hasNextPage || !r.silences.pageInfo.endCursor) break;
      after = r.silences.pageInfo.endCursor;
    }
  }
  return out;
}

const inputOf = (v: Partial<SilenceInput>) => Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined));

export async function createSilence(request: Request, input: SilenceInput): Promise<SilenceView> {
  return (await request<{ createSilence: SilenceView }>('create silence', CreateSilence, { input: inputOf(input) })).createSilence;
}

export async function updateSilence(request: Request, id: string, input: Partial<SilenceInput>): Promise<SilenceView> {
  return (await request<{ updateSilence: SilenceView }>('update silence', UpdateSilence, { id, input: inputOf(input) })).updateSilence;
}

/** Ends the silence now; a silence already gone is not an error. */
export async function expireSilence(request: Request, id: string): Promise<void> {
  try {
    await request('expire silence', ExpireSilence, { id });
  } catch (e) {
    if (e instanceof ServiceApiError && e.kind === 'not-found') return;
    throw e;
  }
}
