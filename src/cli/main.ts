/** certmgr-notify command line: `serve` (the service / hub), `agent` (in each cluster) and `cel eval` (a local CEL playground). */
import { ConfigError, loadAgentConfig, loadServeConfig } from '../config.js';
import type { Logger } from 'pino';
import { createLogger, prettyDestination } from '../log/logger.js';
import { AGENT_USAGE, MAIN_USAGE, SERVE_USAGE, secretFlagsInArgv, usageOf, wantsHelp } from './usage.js';

/** Resolves once SIGTERM or SIGINT closed `running` (a failed close is logged). */
function untilSignal(running: { close(): Promise<void> }, log: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      log.info({ signal: sig }, 'shutting down');
      running.close().then(resolve, (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        resolve();
      });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}

async function agent(args: string[]): Promise<number> {
  if (wantsHelp(args)) {
    process.stdout.write(AGENT_USAGE);
    return 0;
  }
  let cfg;
  try {
    cfg = loadAgentConfig(args);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`certmgr-notify agent: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const log = createLogger({ level: cfg.logLevel });
  const { startAgent } = await import('../agent/index.js');
  let running;
  try {
    running = await startAgent(cfg, log);
  } catch (e) {
    log.error({ err: e }, 'start failed');
    process.stderr.write(`certmgr-notify agent: ${(e as Error).message}\n`);
    return e instanceof ConfigError ? 2 : 1;
  }
  await untilSignal(running, log);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === 'serve') {
    if (wantsHelp(rest)) {
      process.stdout.write(SERVE_USAGE);
      return 0;
    }
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
    const log = createLogger({ level: cfg.logLevel, destination: cfg.logFormat === 'pretty' ? await prettyDestination() : undefined });
    const onArgv = secretFlagsInArgv(rest);
    // the value is never logged: only which flag, and where to put it instead
    if (onArgv.length)
      log.warn(
        { flags: onArgv },
        `${onArgv.join(', ')} given on the command line: visible in ps and echoed by npm start; use CERTMGR_NOTIFY_API_KEY / CERTMGR_NOTIFY_SERVICE_API_KEY or --api-keys-file instead`,
      );
    const { startService } = await import('../main.js');
    let svc;
    try {
      svc = await startService(cfg, log);
    } catch (e) {
      log.error({ err: e }, 'start failed');
      process.stderr.write(`certmgr-notify: ${(e as Error).message}\n`);
      return e instanceof ConfigError ? 2 : 1;
    }
    await untilSignal(svc, log);
    return 0;
  }
  if (cmd === 'agent') return agent(rest);
  if (cmd === 'cel' && rest[0] !== 'eval' && (rest.length === 0 || wantsHelp(rest))) {
    const help = wantsHelp(rest);
    (help ? process.stdout : process.stderr).write(usageOf(['cel'])!);
    return help ? 0 : 2;
  }
  if (cmd === 'cel' && rest[0] === 'eval') {
    const { celEvalCommand } = await import('./cel-eval.js');
    return celEvalCommand(rest.slice(1), { out: (s) => process.stdout.write(s + '\n'), err: (s) => process.stderr.write(s + '\n') });
  }
  if (cmd === 'template' && rest[0] !== 'render' && (rest.length === 0 || wantsHelp(rest))) {
    const help = wantsHelp(rest);
    (help ? process.stdout : process.stderr).write(usageOf(['template'])!);
    return help ? 0 : 2;
  }
  if (cmd === 'template' && rest[0] === 'render') {
    const { templateRenderCommand } = await import('./template-render.js');
    return templateRenderCommand(rest.slice(1), { out: (s) => process.stdout.write(s + '\n'), err: (s) => process.stderr.write(s + '\n') });
  }
  if (cmd === 'help') {
    const text = usageOf(rest.filter((a) => a !== '--help' && a !== '-h'));
    if (text === undefined) {
      process.stderr.write(`certmgr-notify: no help for unknown command '${rest.join(' ')}'\n${MAIN_USAGE}`);
      return 2;
    }
    process.stdout.write(text);
    return 0;
  }
  if (cmd === undefined || cmd === '--help' || cmd === '-h') {
    process.stdout.write(MAIN_USAGE);
    return cmd === undefined ? 2 : 0;
  }
  process.stderr.write(`certmgr-notify: unknown command '${argv.join(' ')}'\n${MAIN_USAGE}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`certmgr-notify: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
