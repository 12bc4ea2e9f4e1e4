import { readFile, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';

/** The median of a sample. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** One line about the machine, so a reader can tell runs apart. */
export function machine(): string {
  return `Node ${process.versions.node}, ${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'})`;
}

/**
 * Replaces the section `name` of BENCHMARKS.md (between its markers) with `body`, or appends it, so
 * each benchmark rewrites only its own part.
 */
export async function writeSection(name: string, body: string): Promise<void> {
  const path = new URL('../BENCHMARKS.md', import.meta.url);
  const header =
    '# Benchmarks\n\nEach section is written by its script in `bench/`; ratios compare against a raw baseline measured alternately in the same run. Machines here are noisy: read the ratios and medians, not single times.\n';
  const current = await readFile(path, 'utf8').catch(() => header);
  const start = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  const section = `${start}\n${body.trim()}\n${end}`;
  const from = current.indexOf(start);
  const to = current.indexOf(end);
  const next =
    from !== -1 && to > from
      ? `${current.slice(0, from)}${section}${current.slice(to + end.length)}`
      : `${current.trimEnd()}\n\n${section}\n`;
  await writeFile(path, next);
}
