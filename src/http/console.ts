/**
 * The web console's static files (docs/console.md) at /ui, same origin as the API: no authentication on
 * the files (the page holds the key in its session and calls POST /graphql). Client-side routes fall back to
 * index.html; `GET /` redirects to /ui/. A console that was not built answers a clear 404.
 *
 * Path safety: the path is decoded once and refused when a segment is `..`, hidden (a dotfile) or holds a
 * backslash or NUL (so `%2e%2e`, `..%2f`, `%5c` cannot climb); the file is then resolved with realpath and must lie
 * inside the real console directory, so a symlink pointing out of it is not followed out. express's res.sendFile
 * (send) serves it.
 */
import { realpath, stat } from 'node:fs/promises';
import { extname, relative, resolve, sep } from 'node:path';
import type express from 'express';
import type { Request, Response } from 'express';
import { sendError } from './errors.js';

/** The console's Content-Security-Policy: everything from this origin, no inline code, no framing. */
export const CONSOLE_CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const NOT_BUILT = 'the console is not built: run npm run build:console';
/** esbuild's hashed names (`[name]-[hash]`, 8 base32 characters): their content never changes under that name. */
const HASHED = /-[A-Z0-9]{8}\.[a-z0-9]+$/;
const YEAR_S = 365 * 24 * 3600;

function securityHeaders(res: Response): void {
  res.setHeader('Content-Security-Policy', CONSOLE_CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  res.setHeader('X-Frame-Options', 'DENY');
}

/** The decoded relative path under /ui/, or null when it is not one we serve (climbing, hidden, malformed). */
export function consolePath(encoded: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(encoded);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  const segments = decoded.split('/');
  if (segments.some((s) => s === '..' || s === '.' || s.startsWith('.'))) return null;
  return segments.filter(Boolean).join('/');
}

const inside = (root: string, p: string) => p === root || p.startsWith(root + sep);

async function realFile(root: string, rel: string): Promise<{ path: string; dir: boolean } | 'missing' | 'outside'> {
  try {
    const p = await realpath(resolve(root, rel));
    if (!inside(root, p)) return 'outside';
    return { path: p, dir: (await stat(p)).isDirectory() };
  } catch {
    return 'missing';
  }
}

/** res.sendFile's callback: an error before anything was sent (the file vanished, unreadable) is a 404. */
const sendFailed = (req: Request, res: Response) => (err: unknown) => {
  if (!err || res.headersSent) return;
  sendError(res, 404, 'NOT_FOUND', `no such file in the console: ${req.path.slice(0, 200)}`);
};

/**
 * Registers GET/HEAD /, /ui and /ui/* (others under /ui: 405). `dir` is read at every request, so a console built
 * after the start is served without a restart.
 */
export function mountConsole(app: express.Express, dir: string): void {
  const notFound = (res: Response, message: string) => sendError(res, 404, 'NOT_FOUND', message);

  const serve = async (req: Request, res: Response) => {
    securityHeaders(res);
    let root: string;
    try {
      root = await realpath(dir);
      if (!(await stat(resolve(root, 'index.html'))).isFile()) throw new Error('no index.html');
    } catch {
      return notFound(res, NOT_BUILT);
    }
    const rel = consolePath(req.path.slice('/ui/'.length));
    if (rel === null) return notFound(res, `no such file in the console: ${req.path.slice(0, 200)}`);
    const found = rel === '' ? 'missing' : await realFile(root, rel);
    if (found === 'outside') return notFound(res, `no such file in the console: ${req.path.slice(0, 200)}`);
    // client-side routes (no file, no extension; or a directory) get the app; a missing asset is a 404
    if (found === 'missing' || found.dir) {
      if (rel !== '' && extname(rel) !== '' && found === 'missing')
        return notFound(res, `no such file in the console: ${req.path.slice(0, 200)}`);
      res.setHeader('Cache-Control', 'no-cache');
      return res.sendFile('index.html', { root, dotfiles: 'deny', cacheControl: false }, sendFailed(req, res));
    }
    const immutable = HASHED.test(found.path);
    res.setHeader('Cache-Control', immutable ? `public, max-age=${YEAR_S}, immutable` : 'no-cache');
    // relative to `root`: `send` checks dotfiles in the path it is given, and the console's own directory may sit
    // under a dot-folder (~/.nvm, ~/.npm/_npx); the relative part was already refused if hidden (consolePath)
    res.sendFile(relative(root, found.path), { root, dotfiles: 'deny', cacheControl: false }, sendFailed(req, res));
  };

  app.get('/', (_req, res) => res.redirect(302, '/ui/'));
  app.get('/ui', (_req, res) => res.redirect(302, '/ui/'));
  app.get('/ui/{*path}', (req, res) => {
    serve(req, res).catch(sendFailed(req, res));
  });
  app.all(['/ui', '/ui/{*path}'], (req, res) => {
    res.setHeader('Allow', 'GET, HEAD');
    sendError(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on the console's files; use GET`);
  });
}
