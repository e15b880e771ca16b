import type { Response } from 'express';
import type { FieldError } from '../service/errors.js';

/** REST error body everywhere: { errors: [ { code, message, field } ] }. */
export function sendErrors(res: Response, status: number, errors: FieldError[] | { code: string; message: string; field?: string }[]): void {
  if (res.headersSent) return; // the request deadline answered first
  res.status(status).type('application/json').send(JSON.stringify({ errors }));
}

export function sendError(res: Response, status: number, code: string, message: string, field?: string): void {
  sendErrors(res, status, [field === undefined ? { code, message } : { code, message, field }]);
}

/** GraphQL-shaped error body for transport-level failures on /graphql (401, 413, 415, 400). */
export function sendGraphqlError(res: Response, status: number, code: string, message: string, extensions: Record<string, unknown> = {}): void {
  if (res.headersSent) return;
  res.status(status).type('application/json').send(JSON.stringify({ errors: [{ message, code, extensions: { code, ...extensions } }] }));
}
