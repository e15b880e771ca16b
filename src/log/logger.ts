import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger };

/** Paths that must never reach a log line. Secrets are also never passed to the logger on purpose. */
const REDACT_PATHS = [
  'req.headers["svc-api-key"]',
  'headers["svc-api-key"]',
  'apiKey',
  'integrationKey',
  'IntegrationKey',
  'signingSecret',
  'secrets',
  '*.secrets',
];

/**
 * A destination writing pino-pretty's readable lines (`--log-format pretty`) to `destination` (default stdout),
 * synchronously like pino's own, coloured on a terminal. Loaded only when asked for.
 */
export async function prettyDestination(
  opts: { destination?: NodeJS.WritableStream; colorize?: boolean } = {},
): Promise<DestinationStream> {
  const { default: pretty } = await import('pino-pretty');
  return pretty({
    destination: opts.destination ?? 1,
    sync: true,
    colorize: opts.colorize ?? process.stdout.isTTY === true,
    translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l o',
    ignore: 'pid,hostname',
  });
}

export function createLogger(opts: { level?: string; destination?: DestinationStream | undefined } = {}): Logger {
  return pino(
    {
      name: 'certmgr-notify',
      level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    opts.destination,
  );
}
