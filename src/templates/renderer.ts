/**
 * Rendering at send time (the delivery worker): the router's template, rendered for the integration's type
 * into Notification.rendered. The template is read per delivery (one indexed join: router → template), and
 * its compiled form cached by (id, updatedAt), so an update is seen by the next delivery without any
 * invalidation message. A template that fails to render (a limit reached, a body that is not JSON) never
 * holds a delivery back nor dead-letters it: the notification goes out with the default message, and
 * certmgr_notify_template_render_failures_total counts it.
 */
import { Counter, type Registry } from 'prom-client';
import type { Notification, RenderedMessage } from '../integrations/types.js';
import type { TemplateRecord } from '../model/records.js';
import { compileTemplate, renderTemplate, type CompiledTemplate } from './engine.js';
import { templateVariables, type VariableOptions } from './variables.js';

const TEMPLATE_RENDER_FAILURES = 'certmgr_notify_template_render_failures_total';
/**
 * Compiled templates kept, oldest inserted out first: at most this many, and at most this many source characters
 * over all of them (a compiled template's AST grows with its source; full-size templates then fit ~10 at once).
 */
const CACHE_ENTRIES = 256;
const CACHE_SOURCE_CHARS = 2 * 1024 * 1024;

export interface TemplateSource {
  /** The template the router references, or null (no template, router or template gone). */
  getRouterTemplate(companyId: string, routerId: string): Promise<TemplateRecord | null>;
}

export class TemplateRenderer {
  readonly #source: TemplateSource;
  readonly #cache = new Map<string, { compiled: CompiledTemplate | null; chars: number }>();
  #cachedChars = 0;
  readonly #failures: Counter<'integration_type' | 'reason'> | undefined;
  readonly #variables: VariableOptions;

  constructor(source: TemplateSource, registry?: Registry, variables: VariableOptions = {}) {
    this.#source = source;
    this.#variables = variables;
    if (registry)
      this.#failures =
        (registry.getSingleMetric(TEMPLATE_RENDER_FAILURES) as Counter<'integration_type' | 'reason'> | undefined) ??
        new Counter({
          name: TEMPLATE_RENDER_FAILURES,
          help: 'Notifications sent with the default message because their router template did not render (limit reached, body not JSON, stored template not compiling)',
          labelNames: ['integration_type', 'reason'],
          registers: [registry],
        });
  }

  #compiled(t: TemplateRecord): CompiledTemplate | null {
    const key = `${t.companyId}/${t.id}/${t.updatedAt}`;
    const hit = this.#cache.get(key);
    if (hit) return hit.compiled;
    const r = compileTemplate(t.parts);
    const compiled = r.ok ? r.template : null;
    const chars = JSON.stringify(t.parts).length;
    while (this.#cache.size > 0 && (this.#cache.size >= CACHE_ENTRIES || this.#cachedChars + chars > CACHE_SOURCE_CHARS)) {
      const [oldest, entry] = this.#cache.entries().next().value!;
      this.#cache.delete(oldest);
      this.#cachedChars -= entry.chars;
    }
    this.#cache.set(key, { compiled, chars });
    this.#cachedChars += chars;
    return compiled;
  }

  /**
   * The rendered message for `n`, or undefined (no template, or it failed: counted). Throws only when the
   * store cannot be read (the caller leaves the claim, as for the integration).
   */
  async render(companyId: string, n: Notification): Promise<RenderedMessage | undefined> {
    const t = await this.#source.getRouterTemplate(companyId, n.router.id);
    if (!t) return undefined;
    const type = n.integration.type;
    const compiled = this.#compiled(t);
    if (!compiled) {
      // written before a stricter engine version, or by hand: the default message
      this.#failures?.inc({ integration_type: type, reason: 'compile' });
      return undefined;
    }
    try {
      return await renderTemplate(compiled, type, templateVariables(n, this.#variables));
    } catch {
      this.#failures?.inc({ integration_type: type, reason: 'render' });
      return undefined;
    }
  }
}
