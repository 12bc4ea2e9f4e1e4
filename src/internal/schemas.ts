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
