import { readFileSync } from 'node:fs';

/** A mount path as /proc/self/mountinfo and /proc/self/mounts write it, its octal escapes (`\040` for a space) undone. */
export function unescapeMountPath(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** This process's mount points (from /proc/self/mountinfo), unescaped. */
export function hostMountPoints(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => point !== undefined)
    .map(unescapeMountPath);
}

/** The mount points below `dir` (not `dir` itself), deepest first: the order to unmount them in. */
export function mountPointsUnder(dir: string): string[] {
  return hostMountPoints()
    .filter((point) => point.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}
