/** REST: GET/PUT /outagedetection/v1/inventorymonitoringconfig/CERTIFICATE_EXPIRATION. */
import { Router, type Response } from 'express';
import { ServiceError, ValidationErrors } from '../../model/errors.js';
import {
  MONITORING_TYPE,
  getMonitoringConfig,
  monitoringResponse,
  parseMonitoringPut,
  putMonitoringConfig,
} from '../../service/monitoring.js';
import { MANAGER_HEADER, RELEASE_HEADER, managerProblem } from '../../model/manager.js';
import type { MonitoringConfigRecord } from '../../model/records.js';
import { sendError, sendErrors } from '../errors.js';

/** The body is spec-fixed, so the manager of record travels in a response header (absent: nobody). */
function withManager(res: Response, rec: MonitoringConfigRecord): MonitoringConfigRecord {
  if (rec.manager) res.setHeader(MANAGER_HEADER, rec.manager);
  return rec;
}

export function monitoringRouter(): Router {
  const r = Router({ caseSensitive: true, strict: true });
  r.all('/:type', async (req, res) => {
    if (req.params.type !== MONITORING_TYPE) {
      return sendError(
        res,
        404,
        'NOT_FOUND',
        `unknown inventory monitoring configuration type '${req.params.type}'; supported: ${MONITORING_TYPE}`,
      );
    }
    try {
      if (req.method === 'GET' || req.method === 'HEAD') {
        return res.json(monitoringResponse(withManager(res, await getMonitoringConfig(res.locals.ctx))));
      }
      if (req.method === 'PUT') {
        const writer = req.get(MANAGER_HEADER);
        const problem = writer === undefined ? undefined : managerProblem(writer);
        if (problem) return sendError(res, 400, 'BAD_USER_INPUT', `header ${MANAGER_HEADER} ${problem}`, MANAGER_HEADER);
        const input = parseMonitoringPut(req.body);
        const release = req.get(RELEASE_HEADER) === 'true';
        const rec = await putMonitoringConfig(res.locals.ctx, input, writer, release);
        res.locals.log.info(
          { enabled: rec.enabled, thresholds: rec.thresholds, manager: rec.manager ?? null },
          'monitoring configuration updated',
        );
        return res.json(monitoringResponse(withManager(res, rec)));
      }
      res.setHeader('Allow', 'GET, HEAD, PUT');
      return sendError(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed; use GET, HEAD or PUT`);
    } catch (e) {
      if (e instanceof ValidationErrors) return sendErrors(res, 400, e.errors);
      if (e instanceof ServiceError) {
        const status = e.code === 'NOT_FOUND' ? 404 : e.code === 'CONFLICT' ? 409 : 400;
        return sendError(res, status, e.code, e.message, e.field);
      }
      throw e;
    }
  });
  r.all('/', (_req, res) => sendError(res, 404, 'NOT_FOUND', `missing configuration type; use /${MONITORING_TYPE}`));
  return r;
}
