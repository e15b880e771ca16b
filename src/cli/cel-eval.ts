/**
 * `certmgr-notify cel eval --expr E --event FILE [--event-type-id ID]`: try a routing filter against an
 * internal event `{ type, data }` stored as JSON or YAML.
 *
 * Exit codes: 0 evaluated (prints `true` or `false`), 1 evaluation error, 2 usage error, unreadable file,
 * invalid expression or invalid event.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { compileFilter, FilterCompileError } from '../cel/index.js';
import { EVENT_TYPE_IDS, familyOfType, isEventType, isEventTypeId, type EventTypeId } from '../events/families.js';
import { validateEvent, type EventValidationError } from '../events/schemas.js';

export interface CommandIo {
  out: (s: string) => void;
  err: (s: string) => void;
}

export const CEL_EVAL_USAGE = `usage: certmgr-notify cel eval --expr EXPRESSION --event FILE [--event-type-id ID]

Evaluates a routing filter against an internal event {type, data} read from FILE (JSON or YAML).
The event type identifier defaults to the family of the event's type; one of:
  ${EVENT_TYPE_IDS.join('\n  ')}
Prints true or false (exit 0); exit 1 on an evaluation error; exit 2 on invalid input.

examples (from the repository root; examples/events/ has one event of each type a client may post):
  certmgr-notify cel eval --expr "type.endsWith('.notready')" --event examples/events/issuer-notready.json   # true
  certmgr-notify cel eval --expr "data.ruleId == 2" --event examples/events/certificate-expiring.json   # true`;

/** `argv` is the argument list after `cel eval`. */
export async function celEvalCommand(argv: string[], io: CommandIo): Promise<number> {
  let values: { expr?: string; event?: string; 'event-type-id'?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        expr: { type: 'string' },
        event: { type: 'string' },
        'event-type-id': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    return usageError(io, (e as Error).message);
  }
  if (values.help) {
    io.out(CEL_EVAL_USAGE);
    return 0;
  }
  if (values.expr === undefined) return usageError(io, 'missing --expr');
  if (values.event === undefined) return usageError(io, 'missing --event');
  const givenId = values['event-type-id'];
  if (givenId !== undefined && !isEventTypeId(givenId)) {
    return usageError(io, `unknown --event-type-id ${JSON.stringify(givenId)}`);
  }

  const loaded = await loadEvent(values.event);
  if (!loaded.ok) {
    io.err(loaded.message);
    return 2;
  }
  const event = loaded.value as { type?: unknown } | null;
  const eventType = typeof event === 'object' && event !== null ? event.type : undefined;
  const eventTypeId: EventTypeId | undefined = givenId ?? (isEventType(eventType) ? familyOfType(eventType).eventTypeId : undefined);

  if (eventTypeId === undefined) return invalidEvent(io, validationErrors(loaded.value));
  let filter;
  try {
    filter = compileFilter(values.expr, eventTypeId);
  } catch (e) {
    if (!(e instanceof FilterCompileError)) throw e;
    io.err(`invalid expression for ${eventTypeId}: ${e.message}`);
    return 2;
  }

  const validation = validateEvent(loaded.value);
  if (!validation.ok) return invalidEvent(io, validation.errors);
  if (familyOfType(validation.event.type).eventTypeId !== eventTypeId) {
    io.err(`event type ${validation.event.type} does not belong to ${eventTypeId}`);
    return 2;
  }

  const result = filter.evaluate(validation.event);
  if (result.error !== undefined) {
    io.err(result.error);
    return 1;
  }
  io.out(String(result.matched));
  return 0;
}

function usageError(io: CommandIo, message: string): number {
  io.err(`${message}\n\n${CEL_EVAL_USAGE}`);
  return 2;
}

function validationErrors(value: unknown): EventValidationError[] {
  const result = validateEvent(value);
  return result.ok ? [] : result.errors;
}

function invalidEvent(io: CommandIo, errors: readonly EventValidationError[]): number {
  io.err(['invalid event:', ...errors.map((e) => `  ${e.path || '(event)'}: ${e.message}`)].join('\n'));
  return 2;
}

/** Reads FILE as JSON, or as YAML when it is not JSON (YAML's core schema keeps timestamps as strings). */
export async function loadEvent(file: string, what = 'event'): Promise<{ ok: true; value: unknown } | { ok: false; message: string }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    return { ok: false, message: `cannot read ${what} file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` };
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    // not JSON: try YAML
  }
  try {
    return { ok: true, value: parseYaml(text) };
  } catch (e) {
    return { ok: false, message: `cannot parse ${what} file ${file} as JSON or YAML: ${(e as Error).message.split('\n')[0]}` };
  }
}
