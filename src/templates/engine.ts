/**
 * The template engine (docs/templates.md): LiquidJS, sandboxed.
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
import {
  Context,
  filters as builtinFilters,
  Liquid,
  LiquidError,
  Tag,
  toPromise,
  toValue,
  type Template,
  type TagToken,
  type TopLevelToken,
} from 'liquidjs';
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
  /**
   * Output of one field or one `capture`, in UTF-16 units, counted while rendering: a field stops there (title and
   * text are then truncated, a body fails), a capture fails. Every character written is also charged to memoryLimit.
   */
  maxOutputChars: 65_536,
  /** Rendering gives the event loop back (setImmediate) after this much time in one go, ms. */
  sliceMs: 2,
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

/** Rendering stopped: an emitter reached TEMPLATE_LIMITS.maxOutputChars. */
class OutputLimitError extends Error {
  constructor(readonly emitter: BoundedEmitter) {
    super(`output limit exceeded: more than ${TEMPLATE_LIMITS.maxOutputChars} characters`);
  }
}

/** Liquid's own stringify (not exported): arrays join their items, nil is empty. */
function stringify(value: unknown): string {
  const v: unknown = toValue(value);
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(stringify).join('');
  return String(v as string);
}

/**
 * Liquid's SimpleEmitter with a bound: the output of a field or of a `capture` (LiquidJS charges neither against
 * its memoryLimit, so 27 doublings by capture would build a 134 M-character string in microseconds). Each write is
 * charged to the render's memoryLimit too, so many captures cannot add up past it.
 */
class BoundedEmitter {
  buffer = '';
  constructor(private readonly memory: Context['memoryLimit']) {}
  write(html: unknown): void {
    const s = stringify(html);
    if (this.buffer.length + s.length > TEMPLATE_LIMITS.maxOutputChars) {
      this.buffer += s.slice(0, TEMPLATE_LIMITS.maxOutputChars - this.buffer.length);
      throw new OutputLimitError(this);
    }
    this.memory.use(s.length);
    this.buffer += s;
  }
}

/** In JSON, the text of a string without its quotes. */
function jsonStringContent(s: string): string {
  return JSON.stringify(s).slice(1, -1);
}

/** What the `json` filter returns in a body: written as it is, not escaped again. */
class JsonText {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const jsonFilter = builtinFilters['json'] as (this: unknown, value: unknown, space?: number) => string;

/**
 * The render's time limit (in place of Liquid's renderLimit) and its slicing: the render gives the event loop back
 * after sliceMs in one go, and the time it waits for its next turn is not charged to its limit, so other tenants'
 * work between slices cannot make a template fail.
 */
class RenderClock {
  #charged = 0;
  #sliceStart: number;
  constructor(private readonly now: () => number) {
    this.#sliceStart = now();
  }
  /** Liquid's Limiter interface: called with the current time before each template node. */
  check(now: number): void {
    if (this.#charged + (now - this.#sliceStart) > TEMPLATE_LIMITS.renderLimitMs) throw new Error('template render limit exceeded');
  }
  use(): void {}
  sliceDue(): boolean {
    return this.now() - this.#sliceStart > TEMPLATE_LIMITS.sliceMs;
  }
  async yieldSlice(): Promise<void> {
    this.#charged += this.now() - this.#sliceStart;
    await new Promise((resolve) => setImmediate(resolve));
    this.#sliceStart = this.now();
  }
}

/**
 * A body is JSON: `{{ value }}` writes the value JSON-escaped (the text of a JSON string, so `"{{ m }}"` is one
 * string whatever m holds), `{{ value | json }}` a JSON document as it is, `{{ value | raw }}` the value unescaped.
 */
function createLiquid(opts: { body: boolean }): Liquid {
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
    ...(opts.body && {
      outputEscape: (v: unknown) => (v instanceof JsonText ? v.text : jsonStringContent(stringify(v))),
    }),
  });
  for (const name of FILE_TAGS) liquid.registerTag(name, refusedTag(name));
  if (opts.body)
    liquid.registerFilter('json', function (this: unknown, value: unknown, space?: number) {
      return new JsonText(jsonFilter.call(this, value, space));
    });
  // Every render (a field, a capture, a loop's body) gets a bounded emitter when none is given, and gives the event
  // loop back when it has held it sliceMs: a for loop renders its body once per item, so a long loop is sliced.
  const renderer = liquid.renderer;
  const renderTemplates = renderer.renderTemplates.bind(renderer);
  renderer.renderTemplates = function* (templates, ctx, emitter) {
    const clock = ctx.renderLimit as unknown;
    if (clock instanceof RenderClock && !ctx.sync && clock.sliceDue()) yield clock.yieldSlice();
    return yield renderTemplates(templates, ctx, emitter ?? new BoundedEmitter(ctx.memoryLimit));
  };
  return liquid;
}

const ENGINES = { text: createLiquid({ body: false }), body: createLiquid({ body: true }) };
const engineFor = (field: PartField): Liquid => (field === 'body' ? ENGINES.body : ENGINES.text);

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

/** Compiles one Liquid source of a part's field (a body escapes its values as JSON); position of the error 1-based. */
export function compileSource(
  src: string,
  field: PartField = 'text',
): { ok: true; template: Template[] } | { ok: false; message: string; line: number; column: number } {
  if (src.length > TEMPLATE_LIMITS.maxPartChars) {
    const n = codePointLength(src);
    if (n > TEMPLATE_LIMITS.maxPartChars)
      return { ok: false, message: `must be at most ${TEMPLATE_LIMITS.maxPartChars} characters, got ${n}`, line: 1, column: 1 };
  }
  try {
    return { ok: true, template: engineFor(field).parse(src) };
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
      const r = compileSource(src, field);
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

/** At most `max` code points; a longer text, or one whose rendering was cut, ends with an ellipsis. */
function truncate(s: string, max: number, cut: boolean): string {
  if (!cut && s.length <= max) return s;
  const cps = Array.from(s);
  if (!cut && cps.length <= max) return s;
  return cps.slice(0, Math.min(cps.length, max - 1)).join('') + '…';
}

/** A field's output, stopped at TEMPLATE_LIMITS.maxOutputChars (`cut`); a capture past it is a render error. */
async function renderField(t: Template[], vars: object, field: PartField): Promise<{ text: string; cut: boolean }> {
  const liquid = engineFor(field);
  const renderLimit = new RenderClock(() => performance.now()) as unknown as Context['renderLimit'];
  const ctx = new Context(vars, liquid.options, {}, { liquid, renderLimit });
  const out = new BoundedEmitter(ctx.memoryLimit);
  try {
    await toPromise(liquid.renderer.renderTemplates(t, ctx, out));
    return { text: out.buffer, cut: false };
  } catch (err) {
    const cause = err instanceof LiquidError ? err.originalError : err;
    if (cause instanceof OutputLimitError && cause.emitter === out) return { text: out.buffer, cut: true };
    throw new TemplateRenderError(err instanceof Error ? reasonOf(err) : 'render failed');
  }
}

async function renderLine(t: Template[], vars: object, field: PartField, max: number): Promise<string> {
  const r = await renderField(t, vars, field);
  const s = r.text.trim();
  return s ? truncate(s, max, r.cut) : '';
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
  const t = title ? await renderLine(title, vars, 'title', TEMPLATE_LIMITS.maxTitleChars) : '';
  if (t) out.title = t;
  const text = own?.text ?? dflt?.text;
  const x = text ? await renderLine(text, vars, 'text', TEMPLATE_LIMITS.maxTextChars) : '';
  if (x) out.text = x;
  const body = type === TEMPLATE_BODY_PART ? own?.body : undefined;
  if (body) {
    const { text: s, cut } = await renderField(body, vars, 'body');
    if (cut || s.length > TEMPLATE_LIMITS.maxBodyChars)
      throw new TemplateRenderError(`body: rendered more than ${TEMPLATE_LIMITS.maxBodyChars} characters`);
    try {
      JSON.parse(s);
    } catch {
      throw new TemplateRenderError('body: the rendered text is not a JSON document (use the json filter for values)');
    }
    out.body = s;
  }
  return out;
}
