import { RequestValidationError } from '../errors.js';

/**
 * Fills a route template such as `/api/v4/browsers/{id}`. Every path parameter of the library goes
 * through here: each is percent-encoded, and one that could change the route (empty, `.`, or with
 * `/`, `\` or `..`) is refused before anything is sent. A lone `.` is a dot segment: URL parsing
 * drops it, so `/browsers/.` would reach `/browsers/`.
 */
export function encodePath(operation: string, template: string, params: Record<string, string> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    const problem =
      typeof value !== 'string'
        ? 'must be a string'
        : value === ''
          ? 'must not be empty'
          : value === '.'
            ? "must not be '.'"
            : /[/\\]|\.\./.test(value)
              ? "must not contain '/', '\\' or '..'"
              : undefined;
    if (problem !== undefined || value === undefined) {
      throw new RequestValidationError(operation, [
        { loc: ['path', name], msg: problem ?? '', type: 'path' },
      ]);
    }
    return encodeURIComponent(value);
  });
}
