/**
 * Money as whole millionths of the currency unit, so that no amount is ever a float; on the wire
 * it is a decimal string, as the cloud service sends it.
 */

/** Parses a non-negative decimal such as `"0.06"` into millionths. */
export function toMicros(decimal: string): number {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(decimal);
  if (!match) throw new RangeError(`not a decimal amount with at most 6 places: ${decimal}`);
  return Number(match[1]) * 1_000_000 + Number((match[2] ?? '').padEnd(6, '0'));
}

/** Writes millionths as a decimal string with at least two places: 1500 → `"0.0015"`. */
export function fromMicros(micros: number): string {
  const whole = Math.trunc(micros / 1_000_000);
  const fraction = String(micros % 1_000_000)
    .padStart(6, '0')
    .replace(/0{1,4}$/, '');
  return `${whole}.${fraction.padEnd(2, '0')}`;
}
