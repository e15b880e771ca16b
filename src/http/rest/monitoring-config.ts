/** REST: GET/PUT /outagedetection/v1/inventorymonitoringconfig/CERTIFICATE_EXPIRATION. */
import { Router } from 'express';
import { ServiceError, ValidationErrors } from '../../service/errors.js';
import {
  MONITORING_TYPE,
  getMonitoringConfig,
  monitoringResponse,
  parseMonitoringPut,
  putMonitoringConfig,
} from '../../service/monitoring.js';
import { sendError, sendErrors } from '../errors.js';

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
      if (req.method === 'GET' || req.method === 'HEAD') return res.json(monitoringResponse(await getMonitoringConfig(res.locals.ctx)));
      if (req.method === 'PUT') {
        const input = parseMonitoringPut(req.body);
        const rec = await putMonitoringConfig(res.locals.ctx, input);
        res.locals.log.info({ enabled: rec.enabled, thresholds: rec.thresholds }, 'monitoring configuration updated');
        return res.json(monitoringResponse(rec));
      }
      res.setHeader('Allow', 'GET, HEAD, PUT');
      return sendError(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed; use GET, HEAD or PUT`);
    } catch (e) {
      if (e instanceof ValidationErrors) return sendErrors(res, 400, e.errors);
      if (e instanceof ServiceError) return sendError(res, e.code === 'NOT_FOUND' ? 404 : 400, e.code, e.message, e.field);
      throw e;
    }
  });
  r.all('/', (_req, res) => sendError(res, 404, 'NOT_FOUND', `missing configuration type; use /${MONITORING_TYPE}`));
  return r;
}
