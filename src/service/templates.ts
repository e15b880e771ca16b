/**
 * Notification templates (docs/templates.md): create, update, delete, list. Every part is compiled
 * before anything is written; a part that does not compile is refused with INVALID_TEMPLATE naming the field
 * (`input.parts.SLACK.text`) and the line and column of the error, like a bad filter.
 */
import { validateEvent } from '../events/schemas.js';
import type { RenderedMessage } from '../integrations/types.js';
import { INTEGRATION_TYPES, type IntegrationType } from '../model/integration-types.js';
import { compileSource, compileTemplate, TEMPLATE_LIMITS, TemplateRenderError } from '../templates/engine.js';
import { renderPreview } from '../templates/preview.js';
import { TEMPLATE_BODY_PART, TEMPLATE_PART_KEYS, type TemplatePart, type TemplateParts, type TemplateRecord } from '../model/records.js';
import type { QuotaOps, TemplateOps, TemplatePatch } from '../store/types.js';
import type { ServiceContext } from './context.js';
import { ServiceError, ValidationErrors, badInput } from '../model/errors.js';
import { requireAllExist, requireIdList } from './ids.js';
import { requireQuota } from './quotas.js';
import { isUuid, requireName } from './validate.js';
import { codePointLength, textIssue } from '../validation/formats.js';

const FIELDS = ['title', 'text', 'body'] as const;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** 1-based line and column (in code points) of the UTF-16 `index` in `s`. */
function positionOf(s: string, index: number): { line: number; column: number } {
  const before = s.slice(0, index);
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: codePointLength(before.slice(lineStart)) + 1 };
}

function requireSource(field: string, v: unknown): string {
  if (typeof v !== 'string') throw badInput(field, `${field} must be a string`);
  const bad = textIssue(v, 'text', TEMPLATE_LIMITS.maxPartChars);
  if (bad) throw new ServiceError('INVALID_TEMPLATE', `${field} ${bad.message}`, field, positionOf(v, bad.index ?? 0));
  const r = compileSource(v);
  if (!r.ok)
    throw new ServiceError('INVALID_TEMPLATE', `${field}: line ${r.line}, column ${r.column}: ${r.message}`, field, {
      line: r.line,
      column: r.column,
    });
  return v;
}

/**
 * Pure but for the compile: the parts, checked (known keys and fields, `body` only for GENERIC_WEBHOOK, sizes,
 * text rules) and compiled. Throws naming the first bad field. Null parts and fields count as absent.
 */
export function requireParts(field: string, v: unknown): TemplateParts {
  if (!isObject(v)) throw badInput(field, `${field} must be an object with parts named ${TEMPLATE_PART_KEYS.join(', ')}`);
  const keys = new Set<string>(TEMPLATE_PART_KEYS);
  const out: TemplateParts = {};
  let fields = 0;
  for (const [key, part] of Object.entries(v)) {
    const at = `${field}.${key}`;
    if (!keys.has(key)) throw badInput(at, `${at}: unknown part; parts are ${TEMPLATE_PART_KEYS.join(', ')}`);
    if (part == null) continue;
    if (!isObject(part)) throw badInput(at, `${at} must be an object with title, text${key === TEMPLATE_BODY_PART ? ', body' : ''}`);
    const p: TemplatePart = {};
    for (const [name, src] of Object.entries(part)) {
      const f = `${at}.${name}`;
      if (!(FIELDS as readonly string[]).includes(name))
        throw badInput(f, `${f}: unknown field; a part has title, text (and body for ${TEMPLATE_BODY_PART})`);
      if (src == null) continue;
      if (name === 'body' && key !== TEMPLATE_BODY_PART) throw badInput(f, `${f}: only the ${TEMPLATE_BODY_PART} part has a body`);
      p[name as (typeof FIELDS)[number]] = requireSource(f, src);
      fields++;
    }
    out[key as keyof TemplateParts] = p;
  }
  if (fields === 0) throw badInput(field, `${field} must give at least one title, text or body`);
  return out;
}

export interface TemplateInput {
  name?: unknown;
  parts?: unknown;
  managedBy?: unknown;
}

function managedByOf(v: unknown): string | null {
  return v == null || v === '' ? null : requireName('input.managedBy', v, 512);
}

export async function createTemplate(ctx: ServiceContext, input: TemplateInput): Promise<TemplateRecord> {
  const name = requireName('input.name', input.name);
  const parts = requireParts('input.parts', input.parts);
  const managedBy = managedByOf(input.managedBy);
  return ctx.store.transaction(async (tx) => {
    await requireQuota(tx, ctx.companyId, 'templates', ctx.quotas);
    const now = ctx.now();
    return tx.createTemplate({ id: ctx.newId(), companyId: ctx.companyId, name, parts, managedBy, createdAt: now, updatedAt: now });
  });
}

/** Changes the name, the parts (all of them: the given parts replace the stored ones) and/or managedBy. */
export async function updateTemplate(ctx: ServiceContext, id: unknown, input: TemplateInput): Promise<TemplateRecord> {
  if (!isUuid(id)) throw badInput('id', 'id must be a UUID');
  const patch: TemplatePatch = {};
  if (input.name != null) patch.name = requireName('input.name', input.name);
  if (input.parts != null) patch.parts = requireParts('input.parts', input.parts);
  if (input.managedBy !== undefined) patch.managedBy = managedByOf(input.managedBy);
  const rec = await ctx.store.updateTemplate(ctx.companyId, id, patch, ctx.now());
  if (!rec) throw new ServiceError('NOT_FOUND', `template ${id} not found`, 'id');
  return rec;
}

export async function listTemplates(ctx: ServiceContext): Promise<TemplateRecord[]> {
  return ctx.store.listTemplates(ctx.companyId);
}

export async function getTemplate(ctx: ServiceContext, id: string): Promise<TemplateRecord | null> {
  return ctx.store.getTemplate(ctx.companyId, id);
}

/** Deletes templates: all or nothing; refused (CONFLICT, naming them) while a router references one. */
export async function deleteTemplates(ctx: ServiceContext, ids: readonly unknown[]): Promise<string[]> {
  const wanted = requireIdList('ids', ids);
  return ctx.store.transaction(async (tx) => {
    // the company's templates lock (PostgreSQL; SQLite transactions are serialized): a router being pointed at
    // one of these templates in a concurrent transaction commits before this check or sees the template gone
    await tx.countForQuota('templates', ctx.companyId);
    await requireAllExist(tx, 'templates', ctx.companyId, wanted);
    const users = await tx.listRoutersByTemplate(ctx.companyId, wanted);
    if (users.length) {
      const list = users.map((r) => `${r.id} (${r.name}) uses ${r.templateId}`).join(', ');
      throw new ServiceError('CONFLICT', `template(s) still used by routers: ${list}; delete or re-point those routers first`, 'ids', {
        routers: users.map((r) => ({ id: r.id, name: r.name, templateId: r.templateId })),
      });
    }
    return tx.deleteTemplates(ctx.companyId, wanted);
  });
}

/** A preview's outcome: the rendered fields, or why the parts did not render (a delivery would send its default message). */
export type TemplatePreview = RenderedMessage & { error?: string };

/**
 * Renders `parts` on `event` for one integration type as a delivery would (the engine's limits: a part's source,
 * render time, memory, output). Stores nothing, sends nothing. Bad parts are refused as createTemplate refuses
 * them, a bad event as simulateRouting refuses it; a render that fails is an `error`, not a refusal.
 */
export async function previewTemplate(ctx: ServiceContext, parts: unknown, event: unknown, type: unknown): Promise<TemplatePreview> {
  if (!(INTEGRATION_TYPES as readonly unknown[]).includes(type))
    throw badInput('integrationType', `integrationType must be one of ${INTEGRATION_TYPES.join(', ')}`);
  const checked = requireParts('parts', parts);
  const v = validateEvent(event);
  if (!v.ok)
    throw new ValidationErrors(
      v.errors.map((e) => ({ code: 'BAD_USER_INPUT', field: `event.${e.path}`, message: `event.${e.path} ${e.message}` })),
    );
  const compiled = compileTemplate(checked);
  if (!compiled.ok)
    throw new ServiceError('INVALID_TEMPLATE', `parts.${compiled.issue.key}.${compiled.issue.field}: ${compiled.issue.message}`, 'parts');
  try {
    return await renderPreview(compiled.template, v.event, type as IntegrationType, { now: ctx.now(), publicUrl: ctx.runtime?.publicUrl });
  } catch (e) {
    if (e instanceof TemplateRenderError) return { error: e.message };
    throw e;
  }
}

/** Inside a router's create/update transaction: the template must exist for the company. */
export async function requireTemplate(tx: TemplateOps & QuotaOps, companyId: string, field: string, id: unknown): Promise<string> {
  if (!isUuid(id)) throw badInput(field, `${field} must be a UUID`);
  await tx.countForQuota('templates', companyId); // the templates lock, against a concurrent deleteTemplates
  const t = await tx.getTemplate(companyId, id);
  if (!t) throw new ServiceError('NOT_FOUND', `${field}: template ${id} not found`, field);
  return t.id;
}
