import type { z } from 'zod';
import { RequestValidationError, type ValidationIssue } from '../errors.js';

/** Zod issues in the service's `HTTPValidationError` shape, `loc` prefixed with where the value came from. */
export function toValidationIssues(error: z.ZodError, prefix: (string | number)[] = []): ValidationIssue[] {
  return error.issues.map((issue) => ({
    loc: [...prefix, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
    msg: issue.message,
    type: issue.code,
  }));
}

/** Validates a request before anything is sent; a failure is a {@link RequestValidationError}. */
export function parseRequest<S extends z.ZodType>(operation: string, schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw new RequestValidationError(operation, toValidationIssues(result.error));
  return result.data;
}
