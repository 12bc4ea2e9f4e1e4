import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * The HAR 1.2 specification (http://www.softwareishard.com/blog/har-12-spec/) as zod schemas,
 * written from the spec: required fields, their types, `-1` where the spec allows "not available",
 * and custom fields only with a leading underscore, as the spec requires.
 */

/** An object with exactly these fields, plus any custom field whose name starts with `_`. */
function harObject<Shape extends z.ZodRawShape>(shape: Shape) {
  return z
    .object(shape)
    .catchall(z.unknown())
    .superRefine((value, ctx) => {
      for (const key of Object.keys(value)) {
        if (!(key in shape) && !key.startsWith('_')) {
          ctx.addIssue({
            code: 'custom',
            message: `unknown field "${key}" (custom fields start with "_")`,
            path: [key],
          });
        }
      }
    });
}

/** ISO 8601 with time and zone, as the spec's `startedDateTime` examples. */
const dateTime = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/, 'ISO 8601');
const comment = z.string().optional();
/** A size or a time: non-negative, or -1 when not available. */
const optionalMeasure = z.number().refine((n) => n === -1 || n >= 0, 'must be -1 or >= 0');
const measure = z.number().min(0);
const size = z.number().int().min(-1);

const creator = harObject({ name: z.string(), version: z.string(), comment });

const page = harObject({
  startedDateTime: dateTime,
  id: z.string().min(1),
  title: z.string(),
  pageTimings: harObject({
    onContentLoad: optionalMeasure.optional(),
    onLoad: optionalMeasure.optional(),
    comment,
  }),
  comment,
});

const cookie = harObject({
  name: z.string(),
  value: z.string(),
  path: z.string().optional(),
  domain: z.string().optional(),
  expires: dateTime.optional(),
  httpOnly: z.boolean().optional(),
  secure: z.boolean().optional(),
  comment,
});

const nameValue = harObject({ name: z.string(), value: z.string(), comment });

const postData = harObject({
  mimeType: z.string(),
  params: z
    .array(
      harObject({
        name: z.string(),
        value: z.string().optional(),
        fileName: z.string().optional(),
        contentType: z.string().optional(),
        comment,
      }),
    )
    .optional(),
  text: z.string().optional(),
  comment,
});

const request = harObject({
  method: z.string().min(1),
  url: z.url(),
  httpVersion: z.string(),
  cookies: z.array(cookie),
  headers: z.array(nameValue),
  queryString: z.array(nameValue),
  postData: postData.optional(),
  headersSize: size,
  bodySize: size,
  comment,
});

const content = harObject({
  size: z.number().int().min(0),
  compression: z.number().int().optional(),
  mimeType: z.string(),
  text: z.string().optional(),
  encoding: z.string().optional(),
  comment,
});

const response = harObject({
  status: z.number().int().min(0),
  statusText: z.string(),
  httpVersion: z.string(),
  cookies: z.array(cookie),
  headers: z.array(nameValue),
  content,
  redirectURL: z.string(),
  headersSize: size,
  bodySize: size,
  comment,
});

const cacheEntry = harObject({
  expires: dateTime.optional(),
  lastAccess: dateTime,
  eTag: z.string(),
  hitCount: z.number().int().min(0),
  comment,
});

const cache = harObject({
  beforeRequest: cacheEntry.nullable().optional(),
  afterRequest: cacheEntry.nullable().optional(),
  comment,
});

const timings = harObject({
  blocked: optionalMeasure.optional(),
  dns: optionalMeasure.optional(),
  connect: optionalMeasure.optional(),
  send: measure,
  wait: measure,
  receive: measure,
  ssl: optionalMeasure.optional(),
  comment,
});

const entry = harObject({
  pageref: z.string().optional(),
  startedDateTime: dateTime,
  time: measure,
  request,
  response,
  cache,
  timings,
  serverIPAddress: z
    .string()
    .refine((ip) => isIP(ip) !== 0, 'an IP address')
    .optional(),
  connection: z.string().optional(),
  comment,
});

/** A whole HAR 1.2 document. */
export const HarSchema = harObject({
  log: harObject({
    version: z.literal('1.2'),
    creator,
    browser: creator.optional(),
    pages: z.array(page).optional(),
    entries: z.array(entry),
    comment,
  }),
});
