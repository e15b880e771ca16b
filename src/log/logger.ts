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

export function createLogger(opts: { level?: string; destination?: DestinationStream } = {}): Logger {
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
