/**
 * The template engine (issue 11, docs/templates.md): LiquidJS, sandboxed.
 *
 * Why LiquidJS: a template is data, never code. Liquid has no expression that calls a function or reaches a
 * prototype (with `ownPropertyOnly`, `{{ x.constructor }}` reads nothing), its tags and filters are a closed
 * set, and it bounds parsing (`parseLimit`), render time (`renderLimit`) and allocations (`memoryLimit`:
 * ranges, joins, appends). It is well kept (MIT, no native code, one small dependency). Handlebars compiles to
 * JavaScript functions and needs its prototype-access guards; Nunjucks' documentation says it is not a sandbox.
 *
 * What this module takes away or adds on top:
 * - no file system: `include`, `render` and `layout` are refused at compile time (with their position), and
 *   the engine's template lookup is an empty in-memory map besides;
 * - unknown filters are compile errors (`strictFilters`); unknown variables render empty (Liquid's default:
 *   a field absent from one event type's data must not break the template for another);
 * - sizes: a part's source at most TEMPLATE_LIMITS.maxPartChars; outputs truncated (title, text) or refused
 *   (body: a truncated JSON document is not one);
 * - dates render in UTC, whatever the host's time zone.
 */
import { Liquid, LiquidError, Tag, type Template, type TagToken, type TopLevelToken } from 'liquidjs';
import { TEMPLATE_BODY_PART, type TemplatePart, type TemplateParts } from '../model/records.js';
import type { RenderedMessage } from '../integrations/types.js';
import { codePointLength } from '../validation/formats.js';

export const TEMPLATE_LIMITS = {
  /** Source of one field of one part, in characters. */
  maxPartChars: 16_384,
  /** Rendered title, in code points (longer: truncated with an ellipsis). */
  maxTitleChars: 1_024,
  /** Rendered text, in code points (longer: truncated with an ellipsis). */
  maxTextChars: 16_384,
  /** Rendered GENERIC_WEBHOOK body, in characters (longer: a render failure, the default message is sent). */
  maxBodyChars: 65_536,
  /** LiquidJS renderLimit: wall time of one field's render, ms. */
  renderLimitMs: 250,
  /** LiquidJS memoryLimit: allocation units (range items, string lengths) of one field's render. */
  memoryLimit: 1_000_000,
} as const;

export type PartField = keyof TemplatePart;
const FIELDS: readonly PartField[] = ['title', 'text', 'body'];

/** Tags that would read other templates (from the file system by default): refused when compiling. */
const FILE_TAGS = ['include', 'render', 'layout'] as const;

function refusedTag(name: string) {
  return class extends Tag {
    constructor(token: TagToken, remain: TopLevelToken[], liquid: Liquid) {
      super(token, remain, liquid);
      throw new Error(`tag "${name}" is not allowed: a template cannot read other templates or files`);
    }
    *render(): Generator<unknown, void, unknown> {}
  };
}

function createLiquid(): Liquid {
  const liquid = new Liquid({
    templates: {},
    ownPropertyOnly: true,
    strictFilters: true,
    strictVariables: false,
    cache: false,
    timezoneOffset: 0,
    parseLimit: TEMPLATE_LIMITS.maxPartChars,
    renderLimit: TEMPLATE_LIMITS.renderLimitMs,
    memoryLimit: TEMPLATE_LIMITS.memoryLimit,
  });
  for (const name of FILE_TAGS) liquid.registerTag(name, refusedTag(name));
  return liquid;
}

const liquid = createLiquid();

/** A part that does not compile: where (part key, field, 1-based line and column) and why. */
export interface CompileIssue {
  key: string;
  field: PartField;
  message: string;
  line: number;
  column: number;
}

export interface CompiledTemplate {
  parts: Partial<Record<string, Partial<Record<PartField, Template[]>>>>;
}

export type CompileResult = { ok: true; template: CompiledTemplate } | { ok: false; issue: CompileIssue };

/** LiquidJS appends ", line:L, col:C" (and sometimes a context excerpt) to its messages: keep the reason only. */
function reasonOf(err: Error): string {
  const first = (err.message.split('\n')[0] ?? '').replace(/, line:\d+, col:\d+$/, '');
  return first || 'syntax error';
}

/** Compiles one Liquid source; position of the error 1-based. */
export function compileSource(
  src: string,
): { ok: true; template: Template[] } | { ok: false; message: string; line: number; column: number } {
  if (src.length > TEMPLATE_LIMITS.maxPartChars) {
    const n = codePointLength(src);
    if (n > TEMPLATE_LIMITS.maxPartChars)
      return { ok: false, message: `must be at most ${TEMPLATE_LIMITS.maxPartChars} characters, got ${n}`, line: 1, column: 1 };
  }
  try {
    return { ok: true, template: liquid.parse(src) };
  } catch (err) {
    if (err instanceof LiquidError) {
      const [line = 1, column = 1] = err.token.getPosition();
      return { ok: false, message: reasonOf(err.originalError ?? err), line, column };
    }
    return { ok: false, message: err instanceof Error ? reasonOf(err) : 'syntax error', line: 1, column: 1 };
  }
}

/**
 * Compiles every field of every part; the first that does not compile is the issue. Keys and fields are
 * expected checked already (the service refuses unknown ones); anything else here is ignored.
 */
export function compileTemplate(parts: TemplateParts): CompileResult {
  const out: CompiledTemplate = { parts: {} };
  for (const [key, part] of Object.entries(parts as Record<string, TemplatePart | undefined>)) {
    if (!part) continue;
    const compiled: Partial<Record<PartField, Template[]>> = {};
    for (const field of FIELDS) {
      const src = part[field];
      if (src === undefined) continue;
      const r = compileSource(src);
      if (!r.ok) return { ok: false, issue: { key, field, message: r.message, line: r.line, column: r.column } };
      compiled[field] = r.template;
    }
    out.parts[key] = compiled;
  }
  return { ok: true, template: out };
}

/** Rendering failed at send time (limit reached, body not JSON): the caller sends the default message. */
export class TemplateRenderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateRenderError';
  }
}

function truncate(s: string, max: number): string {
  if (s.length <= max) return s;
  const cps = Array.from(s);
  return cps.length <= max ? s : cps.slice(0, max - 1).join('') + '…';
}

async function renderField(t: Template[], vars: object): Promise<string> {
  try {
    return String(await liquid.render(t, vars));
  } catch (err) {
    throw new TemplateRenderError(err instanceof Error ? reasonOf(err) : 'render failed');
  }
}

/**
 * The template's message for an integration type: each field from the type's part, else from `default`; a
 * field neither gives is left out (the notifier's own text). `body` only from the GENERIC_WEBHOOK part, and
 * only when it renders to a JSON document. Throws TemplateRenderError.
 */
export async function renderTemplate(c: CompiledTemplate, type: string, vars: object): Promise<RenderedMessage> {
  const own = c.parts[type];
  const dflt = c.parts['default'];
  const out: RenderedMessage = {};
  // a field that renders blank (e.g. an `if` that did not apply) leaves the integration's own text
  const title = own?.title ?? dflt?.title;
  const t = title ? (await renderField(title, vars)).trim() : '';
  if (t) out.title = truncate(t, TEMPLATE_LIMITS.maxTitleChars);
  const text = own?.text ?? dflt?.text;
  const x = text ? (await renderField(text, vars)).trim() : '';
  if (x) out.text = truncate(x, TEMPLATE_LIMITS.maxTextChars);
  const body = type === TEMPLATE_BODY_PART ? own?.body : undefined;
  if (body) {
    const s = await renderField(body, vars);
    if (s.length > TEMPLATE_LIMITS.maxBodyChars)
      throw new TemplateRenderError(`body: rendered ${s.length} characters, more than ${TEMPLATE_LIMITS.maxBodyChars}`);
    try {
      JSON.parse(s);
    } catch {
      throw new TemplateRenderError('body: the rendered text is not a JSON document (use the json filter for values)');
    }
    out.body = s;
  }
  return out;
}
