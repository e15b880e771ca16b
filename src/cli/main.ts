/** certmgr-notify command line: `serve` (the service) and `cel eval` (a local CEL playground). */
import { ConfigError, SERVE_FLAGS, envName, loadServeConfig } from '../config/config.js';
import { createLogger } from '../log.js';

const USAGE = `usage:
  certmgr-notify serve [flags]
  certmgr-notify cel eval --expr <CEL> --event <file.json|yaml> [--event-type-id <id>]

serve flags (each also from the environment variable shown):
${SERVE_FLAGS.map((f) => `  --${f.name.padEnd(22)} ${f.help}  [${envName(f.name)}]`).join('\n')}
`;

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === 'serve') {
    let cfg;
    try {
      cfg = loadServeConfig(rest);
    } catch (e) {
      if (e instanceof ConfigError) {
        process.stderr.write(`certmgr-notify: ${e.message}\n`);
        return 2;
      }
      throw e;
    }
    const log = createLogger({ level: cfg.logLevel });
    const { startService } = await import('../server/serve.js');
    let svc;
    try {
      svc = await startService(cfg, log);
    } catch (e) {
      log.error({ err: e }, 'start failed');
      process.stderr.write(`certmgr-notify: ${(e as Error).message}\n`);
      return e instanceof ConfigError ? 2 : 1;
    }
    await new Promise<void>((resolve) => {
      const stop = (sig: string) => {
        log.info({ signal: sig }, 'shutting down');
        svc.close().then(resolve, (err) => {
          log.error({ err }, 'shutdown failed');
          resolve();
        });
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
    return 0;
  }
  if (cmd === 'cel' && rest[0] === 'eval') {
    const { celEvalCommand } = await import('./cel-eval.js');
    return celEvalCommand(rest.slice(1), { out: (s) => process.stdout.write(s + '\n'), err: (s) => process.stderr.write(s + '\n') });
  }
  if (cmd === undefined || cmd === 'help' || cmd === '--help' || cmd === '-h') {
    process.stdout.write(USAGE);
    return cmd === undefined ? 2 : 0;
  }
  process.stderr.write(`certmgr-notify: unknown command '${argv.join(' ')}'\n${USAGE}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`certmgr-notify: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
