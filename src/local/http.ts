import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import type { ValidationIssue } from '../errors.js';
import { toValidationIssues } from '../internal/validation.js';

/** An error answer of the local service: `{detail}` with the status, as the cloud service sends them. */
export class HttpError extends Error {
  readonly status: number;
  readonly detail: string | ValidationIssue[];
  readonly headers: Record<string, string>;

  constructor(status: number, detail: string | ValidationIssue[], headers: Record<string, string> = {}) {
    super(typeof detail === 'string' ? detail : 'validation failed');
    this.status = status;
    this.detail = detail;
    this.headers = headers;
  }
}

/** Bodies larger than this are refused with 413 before they are read whole. */
export const MAX_BODY_BYTES = 1024 * 1024;

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  if (status === 204) {
    res.writeHead(204, headers).end();
    return;
  }
  const text = JSON.stringify(body);
  res
    .writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...headers,
    })
    .end(text);
}

/** Reads a JSON body; an empty body reads as `{}`. Malformed JSON is a 422 as FastAPI gives it. */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) throw new HttpError(413, `Request body larger than ${MAX_BODY_BYTES} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `Request body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(422, [
      { loc: ['body'], msg: `JSON decode error: ${(error as Error).message}`, type: 'json_invalid' },
    ]);
  }
}

/** Validates with the client's own schema; failures are a 422 `HTTPValidationError`. */
export function validate<S extends z.ZodType>(
  schema: S,
  input: unknown,
  where: 'body' | 'query' | 'path',
): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw new HttpError(422, toValidationIssues(result.error, [where]));
  return result.data;
}

/** Query parameters as an object; `metadata=key=value` pairs, repeated, become one record. */
export function readQuery(url: URL): Record<string, unknown> {
  const query: Record<string, unknown> = {};
  for (const [name, value] of url.searchParams) {
    if (name === 'metadata') {
      const at = value.indexOf('=');
      const pairs = (query.metadata ?? {}) as Record<string, string>;
      pairs[at === -1 ? value : value.slice(0, at)] = at === -1 ? '' : value.slice(at + 1);
      query.metadata = pairs;
    } else {
      query[name] = value;
    }
  }
  return query;
}
