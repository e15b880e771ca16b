/**
 * REST inventory (docs/inventory.md): `POST /v1/inventory` (agents' reports, scope `inventory`) and
 * `GET /v1/inventory/certificates.csv` (the listing as a spreadsheet, scope `query`).
 */
import type { Request, Response } from 'express';
import { byWorst, isServingProblem, worstServingStatus } from '../../inventory/serving.js';
import { validateInventoryReport } from '../../inventory/validate.js';
import type { LogLimiter } from '../../log/limiter.js';
import { RESYNC_REQUIRED } from '../../model/inventory.js';
import { ServiceError } from '../../model/errors.js';
import type { IngestDeps } from '../../ingest/pipeline.js';
import {
  applyInventoryReport,
  certificateFilter,
  daysUntilExpiry,
  encodeCertificateCursor,
  healthOf,
  listCertificates,
  servingStatusName,
  type CertificateFilterInput,
} from '../../service/inventory.js';
import { MAX_PAGE } from '../../service/validate.js';
import type { ListedCertificate } from '../../store/types.js';
import { boundedErr, sendError, sendErrors } from '../errors.js';
import { withStoreGate } from '../store-gate.js';

/** A quota refusal is not the agent's fault and not transient either: it retries slowly (429), never resyncs. */
const QUOTA_RETRY_AFTER_SECONDS = 300;

export function postInventory(deps: { logLimiter?: LogLimiter | undefined; ingest?: IngestDeps | undefined }) {
  return async (req: Request, res: Response): Promise<void> => {
    const v = validateInventoryReport(req.body);
    if (!v.ok)
      return sendErrors(
        res,
        400,
        v.errors.map((e) => ({ code: 'BAD_USER_INPUT', message: e.message, field: e.field })),
      );
    const r = v.report;
    const log = res.locals.log.child({ clusterId: r.cluster.id });
    try {
      const out = await applyInventoryReport(res.locals.ctx, r, {
        log,
        logLimiter: deps.logLimiter,
        ingest: deps.ingest ? { ...deps.ingest, log } : undefined,
      });
      if ('resync' in out) {
        log.info({ epoch: r.epoch, seq: r.seq, kind: r.kind, reason: out.resync.reason }, 'inventory report refused: resync required');
        if (res.headersSent) return;
        const message = `resync required: ${out.resync.reason}`;
        res.status(409).json({
          code: RESYNC_REQUIRED,
          message,
          clusterId: r.cluster.id,
          epoch: r.epoch,
          seq: r.seq,
          errors: [{ code: RESYNC_REQUIRED, message }],
        });
        return;
      }
      log.debug({ epoch: r.epoch, seq: r.seq, kind: r.kind, status: out.ack.status, upserts: r.upserts.length }, 'inventory report');
      if (!res.headersSent) res.status(200).json(out.ack);
    } catch (e) {
      if (e instanceof ServiceError && e.code === 'QUOTA_EXCEEDED') {
        log.warn({ quota: e.details?.quota, limit: e.details?.limit }, 'inventory report refused: quota');
        if (res.headersSent) return;
        res.setHeader('Retry-After', String(QUOTA_RETRY_AFTER_SECONDS));
        res.status(429).json({ errors: [{ code: e.code, message: e.message, ...e.details }] });
        return;
      }
      if (e instanceof ServiceError) return sendError(res, 400, e.code, e.message, e.field);
      throw e; // store unavailable → 503 in the app's error handler
    }
  };
}

// ---------------------------------------------------------------------------------------------------------------
// CSV export

const FILTER_PARAMS = [
  'clusterId',
  'namespace',
  'applicationId',
  'expiringWithinDays',
  'health',
  'servingStatus',
  'servingProblem',
] as const;

const iso = (ms: number | null) => (ms === null ? '' : new Date(ms).toISOString());

/** The worst status of the endpoints, as the API names it; empty without any. */
function servingStatusOf(c: ListedCertificate): string | null {
  const worst = worstServingStatus(c.serving);
  return worst === null ? null : servingStatusName(worst);
}

/** The endpoints with a problem, worst first: `host=STATUS`, joined with "; ". */
const servingProblemsOf = (c: ListedCertificate): string =>
  byWorst((c.serving ?? []).filter((e) => isServingProblem(e.status)))
    .map((e) => `${e.host}=${servingStatusName(e.status)}`)
    .join('; ');

/**
 * Columns: the GraphQL field names. Lists joined with "; ", labels as JSON. The served truth (docs/serving.md):
 * the worst status, the number of endpoints and the endpoints with a problem.
 */
const COLUMNS: readonly [string, (c: ListedCertificate, now: number) => string | number | null][] = [
  ['clusterId', (c) => c.clusterId],
  ['clusterName', (c) => c.clusterName],
  ['namespace', (c) => c.namespace],
  ['secretName', (c) => c.secretName],
  ['certificateName', (c) => c.certificateName],
  ['certificateUid', (c) => c.certificateUid],
  ['serial', (c) => c.serial],
  ['notBefore', (c) => iso(c.notBefore)],
  ['notAfter', (c) => iso(c.notAfter)],
  ['daysUntilExpiry', (c, now) => daysUntilExpiry(c.notAfter, now)],
  ['health', (c) => healthOf(c.readyStatus)],
  ['readyStatus', (c) => c.readyStatus],
  ['readyReason', (c) => c.readyReason],
  ['subject', (c) => c.subject],
  ['commonName', (c) => c.commonName],
  ['dnsNames', (c) => c.dnsNames.join('; ')],
  ['issuer', (c) => c.issuer],
  ['issuerRefName', (c) => c.issuerRef?.name ?? null],
  ['issuerRefKind', (c) => c.issuerRef?.kind ?? null],
  ['issuerRefGroup', (c) => c.issuerRef?.group ?? null],
  ['applicationIds', (c) => c.applicationIds.join('; ')],
  ['labels', (c) => JSON.stringify(c.labels)],
  ['chainNotAfter', (c) => iso(c.chainNotAfter)],
  ['updatedAt', (c) => iso(c.updatedAt)],
  ['servingStatus', servingStatusOf],
  ['servingEndpointCount', (c) => c.serving?.length ?? 0],
  ['servingProblems', servingProblemsOf],
];

/**
 * Text a spreadsheet would run as a formula: TAB or CR first, or = + - @ (or their full-width and small forms
 * ＝ ＋ － ＠ ﹦ ﹢ ﹣ ﹫, which spreadsheets read as the same signs) after any leading blanks, control or
 * invisible format characters (spreadsheets skip those).
 */
const FORMULA_START = /^[\t\r]|^[\p{White_Space}\p{Cc}\p{Cf}]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20\uFE66\uFE62\uFE63\uFE6B]/u;

/**
 * One CSV cell (RFC 4180: quoted when it holds a comma, quote, CR or LF; quotes doubled). Text that a
 * spreadsheet would run as a formula (FORMULA_START) gets a leading `'` (OWASP CSV injection).
 * Numbers are ours, never text from an agent, and stay numbers.
 */
export function csvCell(v: string | number | null): string {
  if (v === null) return '';
  if (typeof v === 'number') return String(v);
  const s = FORMULA_START.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

const csvLine = (cells: (string | number | null)[]) => cells.map(csvCell).join(',') + '\r\n';

function csvFilter(req: Request, now: number) {
  const q = req.query as Record<string, unknown>;
  for (const k of Object.keys(q))
    if (!(FILTER_PARAMS as readonly string[]).includes(k))
      throw new ServiceError(
        'BAD_USER_INPUT',
        `unknown query parameter ${k.slice(0, 64)}; allowed: ${FILTER_PARAMS.join(', ')}`,
        k.slice(0, 64),
      );
  const input: CertificateFilterInput = {};
  for (const k of FILTER_PARAMS) {
    const v = q[k];
    if (v === undefined) continue;
    if (typeof v !== 'string') throw new ServiceError('BAD_USER_INPUT', `${k} must be given once`, k);
    if (k === 'expiringWithinDays') {
      if (!/^\d{1,4}$/.test(v)) throw new ServiceError('BAD_USER_INPUT', `expiringWithinDays must be an integer from 0 to 3650`, k);
      input.expiringWithinDays = Number(v);
    } else if (k === 'servingProblem') {
      if (v !== 'true' && v !== 'false') throw new ServiceError('BAD_USER_INPUT', `servingProblem must be true or false`, k);
      input.servingProblem = v === 'true';
    } else if (k === 'health') input.health = v as NonNullable<CertificateFilterInput['health']>;
    else input[k] = v;
  }
  return certificateFilter(input, now, '');
}

const drained = (res: Response) =>
  new Promise<void>((resolve) => {
    const done = () => (res.off('drain', done), res.off('close', done), resolve());
    res.on('drain', done).on('close', done);
  });

export async function exportCertificatesCsv(req: Request, res: Response): Promise<void> {
  const ctx = withStoreGate(res.locals.ctx);
  const now = ctx.now();
  let filter;
  try {
    filter = csvFilter(req, now);
  } catch (e) {
    if (e instanceof ServiceError) return sendError(res, 400, e.code, e.message, e.field);
    throw e;
  }
  // the first page before any byte is sent: a store outage is still a proper 503, a full share of the store a 429
  let page;
  try {
    page = await listCertificates(ctx, filter, { first: MAX_PAGE });
  } catch (e) {
    if (!(e instanceof ServiceError && e.code === 'TOO_MANY_REQUESTS')) throw e;
    res.setHeader('Retry-After', '1');
    return sendError(res, 429, e.code, e.message);
  }
  if (res.headersSent) return;
  res.status(200);
  res.setHeader('Content-Type', 'text/csv; charset=utf-8; header=present');
  res.setHeader('Content-Disposition', 'attachment; filename="certificates.csv"');
  res.setHeader('Cache-Control', 'no-store');
  if (req.method === 'HEAD') return void res.end();
  res.write(csvLine(COLUMNS.map(([name]) => name)));
  let rows = 0;
  try {
    for (;;) {
      if (res.destroyed) return; // the client left, or the request deadline cut the export
      const text = page.nodes.map((c) => csvLine(COLUMNS.map(([, get]) => get(c, now)))).join('');
      rows += page.nodes.length;
      if (!res.write(text)) await drained(res);
      const last = page.nodes.at(-1);
      if (!page.hasNextPage || !last) break;
      page = await listCertificates(ctx, filter, { first: MAX_PAGE, after: encodeCertificateCursor(last) });
    }
    res.end();
  } catch (e) {
    // mid-stream: the status is sent already; cut the connection so the file is visibly incomplete
    res.locals.log.warn({ err: boundedErr(e), rows }, 'certificate export failed mid-stream');
    res.destroy();
  }
}
