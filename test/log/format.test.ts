/** `--log-format json | pretty` (serve): parsed like every flag; pretty writes pino-pretty's readable lines. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadServeConfig } from '../../src/config.js';
import { createLogger, prettyDestination } from '../../src/log/logger.js';

describe('--log-format', () => {
  it.each([
    [[], {}, 'json'],
    [['--log-format', 'pretty'], {}, 'pretty'],
    [['--log-format=json'], { CERTMGR_NOTIFY_LOG_FORMAT: 'pretty' }, 'json'],
    [[], { CERTMGR_NOTIFY_LOG_FORMAT: 'pretty' }, 'pretty'],
  ] as const)('%j with %j → %s', (argv, env, want) => {
    expect(loadServeConfig([...argv], env).logFormat).toBe(want);
  });

  it('refuses another value, naming the flag and the choices', () => {
    expect(() => loadServeConfig(['--log-format', 'yaml'], {})).toThrow(ConfigError);
    expect(() => loadServeConfig(['--log-format', 'yaml'], {})).toThrow("--log-format must be json or pretty, got 'yaml'");
  });
});

describe('prettyDestination', () => {
  it('writes readable lines (level, message, fields), redacted like the JSON ones', async () => {
    let out = '';
    const destination = new Writable({
      write(chunk: Buffer, _enc, cb) {
        out += chunk.toString('utf8');
        cb();
      },
    });
    const log = createLogger({ level: 'info', destination: await prettyDestination({ destination, colorize: false }) });
    log.warn({ integrationId: 'i-1', apiKey: 'k-very-secret' }, 'delivery attempt failed; will retry');
    expect(out).toMatch(
      /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [+-]\d{4}\] WARN \(certmgr-notify\): delivery attempt failed; will retry\n/,
    );
    expect(out).toContain('integrationId: "i-1"');
    expect(out).toContain('apiKey: "[redacted]"');
    expect(out).not.toContain('k-very-secret');
    expect(out.trimStart().startsWith('{')).toBe(false);
  });
});
