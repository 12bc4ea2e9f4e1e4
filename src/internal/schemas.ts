import { z } from 'zod';

/** Building blocks shared by the resource schemas; the local service validates with the same ones. */

export const id = z.guid('must be a UUID');

export const countryCode = z
  .string()
  .regex(/^[a-z]{2}$/, 'must be a lower-case ISO 3166-1 alpha-2 country code such as "us" or "de"');

export const metadata = z
  .record(z.string(), z.string())
  .refine((pairs) => Object.keys(pairs).length <= 10, 'must have at most 10 pairs');

/** Decimal amounts come as strings so money is never a float; a number from an older service is kept as written. */
export const decimal = z.union([z.string(), z.number().transform(String)]);

/** A value that may be null or absent on the wire; absent reads as null. */
export const nullable = <T extends z.ZodType>(schema: T) => schema.nullable().default(null);

/** An integer query parameter: the local service reads it from a string, the client sends a number. */
export const intParam = (min: number, max: number) =>
  z.coerce.number().int('must be a whole number').min(min).max(max);

/** One page of a list response. */
export const pageOf = <T extends z.ZodType>(item: T) =>
  z.looseObject({
    items: z.array(item),
    totalItems: z.number().int().nonnegative(),
    pageNumber: z.number().int().positive(),
    pageSize: z.number().int().positive(),
  });

const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;

/** A bare host name such as `example.com`, compared in lower case; it also covers its subdomains. */
export const hostName = z
  .string()
  .regex(HOST_NAME, 'must be a bare host name such as example.com: no scheme, port, path or wildcard')
  .transform((host) => host.toLowerCase());

/**
 * A host name or a `*.<domain>` pattern, as v2 and v3 tasks take them: `*.example.com` covers the
 * subdomains of example.com, `example.com` the host and its subdomains.
 */
export const domainPattern = z
  .string()
  .refine(
    (value) => HOST_NAME.test(value.startsWith('*.') ? value.slice(2) : value),
    'must be a host name such as example.com or a pattern such as *.example.com: no scheme, port or path',
  )
  .transform((pattern) => pattern.toLowerCase());
