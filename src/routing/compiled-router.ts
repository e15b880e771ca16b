/** A stored router with its filter compiled: what match.ts decides on and index-prefilter.ts indexes. */
import type { CompiledFilter } from '../cel/index.js';
import type { RouterRecord } from '../model/records.js';

export interface CompiledRouter {
  record: RouterRecord;
  /** null when the stored filter no longer compiles (e.g. written by an older version): never matches. */
  filter: CompiledFilter | null;
  compileError?: string;
}
