/**
 * `certmgr-notify template render --template FILE --event FILE [--type TYPE]`: preview a notification template
 * (docs/templates.md) on an internal event `{ type, data }`, without a server. FILE (JSON or YAML) is a
 * NotificationTemplate resource (`spec.parts`), an object with `parts`, or the parts themselves.
 *
 * Prints a JSON object: per integration type (or only --type), the rendered title, text and body; a field the
 * template does not give is left out (the integration's own text). Exit codes: 0 rendered, 1 a part failed to
 * render (a limit reached, a body that is not JSON), 2 usage error, unreadable file, a part that does not
 * compile (with its field, line and column) or an invalid event.
 */
import { parseArgs } from 'node:util';
import { ConfigError, publicUrlOf } from '../config.js';
import { validateEvent } from '../events/schemas.js';
import type { RenderedMessage } from '../integrations/types.js';
import { INTEGRATION_TYPES } from '../model/integration-types.js';
import { ServiceError } from '../model/errors.js';
import { requireParts } from '../service/templates.js';
import { compileTemplate, TemplateRenderError } from '../templates/engine.js';
import { renderPreview } from '../templates/preview.js';
import { loadEvent, type CommandIo } from './cel-eval.js';
import { TEMPLATE_RENDER_USAGE } from './usage.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The parts inside a template file: spec.parts (the CR), parts, or the object itself. */
function partsOf(v: unknown): unknown {
  if (isObject(v) && isObject(v['spec']) && 'parts' in v['spec']) return v['spec']['parts'];
  if (isObject(v) && 'parts' in v) return v['parts'];
  return v;
}

/** `argv` is the argument list after `template render`. */
export async function templateRenderCommand(argv: string[], io: CommandIo): Promise<number> {
  let values: {
    template?: string;
    event?: string;
    type?: string;
    'router-name'?: string;
    'integration-name'?: string;
    'public-url'?: string;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        template: { type: 'string' },
        event: { type: 'string' },
        type: { type: 'string' },
        'router-name': { type: 'string' },
        'integration-name': { type: 'string' },
        'public-url': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    return usageError(io, (e as Error).message);
  }
  if (values.help) {
    io.out(TEMPLATE_RENDER_USAGE);
    return 0;
  }
  if (values.template === undefined) return usageError(io, 'missing --template');
  if (values.event === undefined) return usageError(io, 'missing --event');
  let publicUrl: string | undefined;
  try {
    publicUrl = publicUrlOf(values['public-url']);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return usageError(io, e.message);
  }
  const types = values.type === undefined ? [...INTEGRATION_TYPES] : INTEGRATION_TYPES.filter((t) => t === values.type);
  if (types.length === 0) return usageError(io, `unknown --type ${JSON.stringify(values.type)}`);

  const file = await loadEvent(values.template, 'template');
  if (!file.ok) return fail(io, file.message);
  let parts;
  try {
    parts = requireParts('parts', partsOf(file.value));
  } catch (e) {
    if (!(e instanceof ServiceError)) throw e;
    return fail(io, `invalid template: ${e.message}`);
  }
  const compiled = compileTemplate(parts);
  if (!compiled.ok) return fail(io, `invalid template: parts.${compiled.issue.key}.${compiled.issue.field}: ${compiled.issue.message}`);

  const ev = await loadEvent(values.event, 'event');
  if (!ev.ok) return fail(io, ev.message);
  const v = validateEvent(ev.value);
  if (!v.ok) return fail(io, ['invalid event:', ...v.errors.map((e) => `  ${e.path || '(event)'}: ${e.message}`)].join('\n'));

  const now = Date.now();
  const out: Record<string, RenderedMessage> = {};
  for (const type of types) {
    try {
      out[type] = await renderPreview(compiled.template, v.event, type, {
        now,
        publicUrl,
        routerName: values['router-name'],
        integrationName: values['integration-name'],
      });
    } catch (e) {
      if (!(e instanceof TemplateRenderError)) throw e;
      io.err(`${type}: ${e.message}`);
      return 1;
    }
  }
  io.out(JSON.stringify(out, null, 2));
  return 0;
}

function fail(io: CommandIo, message: string): number {
  io.err(message);
  return 2;
}

function usageError(io: CommandIo, message: string): number {
  io.err(`${message}\n\n${TEMPLATE_RENDER_USAGE}`);
  return 2;
}
