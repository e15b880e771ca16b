/**
 * The `unit` project's guard (installed by its setup file, unit-setup.ts): that tier needs Node and node_modules
 * only, so a test in it that starts another program (shellcheck, openssl, a server) fails with a message naming
 * the program, on every machine, not only on one that lacks it. Node itself (process.execPath) may be started: that
 * is how tests run a second process of ours. Such a test belongs in the int tier (`*.int.test.ts` or
 * vitest.config.ts).
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { basename } from 'node:path';
import { promisify } from 'node:util';

type ChildProcessModule = typeof import('node:child_process');

const PATCHED = Symbol.for('certmgr-notify.unit-tier');

/** Why the unit tier refuses to start `command`, or undefined when it may (Node itself). */
export function refusal(command: unknown, execPath: string): string | undefined {
  if (typeof command !== 'string') return undefined; // not a command: child_process reports its own error
  if (command === execPath || command === 'node' || basename(command) === basename(execPath)) return undefined;
  if (command.includes(' ') || /[|&;<>]/.test(command)) {
    return `the unit tier starts no programs, and a shell command line is one: ${JSON.stringify(command)}; name the test *.int.test.ts`;
  }
  return `the unit tier starts no programs but Node, and this test starts ${JSON.stringify(command)}; name the test *.int.test.ts`;
}

/** Wraps child_process's ways of starting a program (ESM importers included) with the check; idempotent. */
export function installGuard(): void {
  const cp = createRequire(import.meta.url)('node:child_process') as ChildProcessModule & Record<symbol, boolean>;
  if (cp[PATCHED]) return;
  const check = (command: unknown): void => {
    const why = refusal(command, process.execPath);
    if (why) throw new Error(why);
  };
  const wrap = <F extends (...args: never[]) => unknown>(original: F): F => {
    const wrapped = function (this: unknown, ...args: Parameters<F>): unknown {
      check(args[0]);
      return original.apply(this, args);
    } as unknown as F;
    const custom = (original as unknown as Record<symbol, unknown>)[promisify.custom];
    if (typeof custom === 'function') {
      Object.defineProperty(wrapped, promisify.custom, {
        value: (...args: unknown[]) => {
          check(args[0]);
          return (custom as (...a: unknown[]) => unknown)(...args);
        },
      });
    }
    return wrapped;
  };
  cp.spawn = wrap(cp.spawn);
  cp.spawnSync = wrap(cp.spawnSync);
  cp.execFile = wrap(cp.execFile);
  cp.execFileSync = wrap(cp.execFileSync);
  cp.exec = wrap(cp.exec);
  cp.execSync = wrap(cp.execSync);
  cp[PATCHED] = true;
  syncBuiltinESMExports();
}
