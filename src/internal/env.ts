/** Reads an environment variable; empty or blank counts as unset. */
export function readEnv(name: string): string | undefined {
  const value = process.env[name]?.trim();
  return value ? value : undefined;
}
