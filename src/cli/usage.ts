/** Usage texts of every command, and the start-time warning about secrets given on the command line. */
import { AGENT_FLAGS, SERVE_FLAGS, envName } from '../config.js';
import { LIMITS, formatLimit } from '../limits.js';
import { CEL_EVAL_USAGE } from './cel-eval.js';
import { INTEGRATION_TYPES } from '../model/integration-types.js';

const SECRET_ARGV_NOTE = `API keys: prefer the environment variable CERTMGR_NOTIFY_API_KEY or --api-keys-file (or let serve generate
<store dir>/api-key). A key given as --api-key on the command line is visible to every local user in \`ps\`, and
\`npm start -- --api-key …\` echoes the whole command line, key included, on every start.`;

export const SERVE_USAGE = `usage: certmgr-notify serve [flags]

Runs the service (REST + GraphQL API, delivery) and, with --kube, the operator and emitter.
Every flag is also read from the environment variable shown; flags win. --help, -h: this text.

flags:
${SERVE_FLAGS.map((f) => `  --${f.name.padEnd(28)} ${f.help}  [${envName(f.name)}]`).join('\n')}

limits file keys (--limits-file, YAML; every key optional; durations such as 500ms, 30s, 5m, 1h):
${LIMITS.map((l) => `  ${l.key.padEnd(30)} ${l.help} (default ${formatLimit(l, l.default)})`).join('\n')}

${SECRET_ARGV_NOTE}
`;

export const AGENT_USAGE = `usage: certmgr-notify agent --hub-url URL --api-key-file FILE --cluster-name NAME [flags]

Runs in a cluster: watches cert-manager Issuers, ClusterIssuers, Certificates and TLS Secrets, sends health
events and the certificate inventory to the hub (certmgr-notify serve), and serves /healthz, /readyz, /metrics.
No store, no API. See docs/agent.md. Every flag is also read from the environment variable shown; flags win.
--help, -h: this text.

flags:
${AGENT_FLAGS.map((f) => `  --${f.name.padEnd(28)} ${f.help}  [${envName(f.name)}]`).join('\n')}
`;

const CEL_USAGE = `usage: certmgr-notify cel eval --expr EXPRESSION --event FILE [--event-type-id ID]

Subcommands:
  eval   evaluate a routing filter against an event file (certmgr-notify cel eval --help)
`;

/** `template render` (src/cli/template-render.ts); here so that --help loads no template engine. */
export const TEMPLATE_RENDER_USAGE = `usage: certmgr-notify template render --template FILE --event FILE [--type TYPE] [--router-name NAME] [--integration-name NAME]

Renders a notification template (JSON or YAML: a NotificationTemplate resource, {parts: ...}, or the parts)
for an internal event {type, data} read from --event (JSON or YAML), as the delivery worker would.
--type: one of ${INTEGRATION_TYPES.join(', ')} (default: every type).
--public-url: the hub's --public-url, for the template variable consoleUrl (default: null, as a hub without it).
Prints JSON {TYPE: {title, text, body}} (exit 0); exit 1 when a part fails to render; exit 2 on invalid input.

example (from the repository root):
  certmgr-notify template render --template examples/templates/ops.yaml --event examples/events/issuer-notready.json --type SLACK`;

const TEMPLATE_USAGE = `usage: certmgr-notify template render --template FILE --event FILE [--type TYPE]

Subcommands:
  render   preview a notification template on an event file (certmgr-notify template render --help)
`;

export const MAIN_USAGE = `usage:
  certmgr-notify serve [flags]          run the service (certmgr-notify serve --help lists every flag)
  certmgr-notify agent [flags]          run in a cluster, reporting to a hub (certmgr-notify agent --help)
  certmgr-notify cel eval [flags]       try a routing filter on an event file (certmgr-notify cel eval --help)
  certmgr-notify template render [flags]  preview a notification template (certmgr-notify template render --help)
  certmgr-notify help [command]         this text, or the usage of a command

${SECRET_ARGV_NOTE}
`;

/** True when the arguments ask for help (`--help` or `-h` anywhere: no flag takes either as its value). */
export function wantsHelp(args: readonly string[]): boolean {
  return args.some((a) => a === '--help' || a === '-h');
}

/** The usage text of `help <command…>`, or undefined for an unknown command. */
export function usageOf(command: readonly string[]): string | undefined {
  const [cmd, sub] = command;
  if (cmd === undefined) return MAIN_USAGE;
  if (cmd === 'serve') return SERVE_USAGE;
  if (cmd === 'agent') return AGENT_USAGE;
  if (cmd === 'cel') return sub === 'eval' ? CEL_EVAL_USAGE + '\n' : CEL_USAGE;
  if (cmd === 'template') return sub === 'render' ? TEMPLATE_RENDER_USAGE + '\n' : TEMPLATE_USAGE;
  if (cmd === 'help') return MAIN_USAGE;
  return undefined;
}

/** Flags carrying secrets that were given on the command line (not from the environment or a file). */
export function secretFlagsInArgv(args: readonly string[]): string[] {
  const secret = ['api-key', 'service-api-key'];
  const found = new Set<string>();
  for (const a of args) {
    if (!a.startsWith('--')) continue;
    const name = a.slice(2).split('=')[0]!;
    if (secret.includes(name)) found.add('--' + name);
  }
  return [...found];
}
