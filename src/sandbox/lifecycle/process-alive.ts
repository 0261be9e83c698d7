/**
 * Whether process `pid` exists on this host (crash reaping asks it of the process a run
 * label names). A process of another user (EPERM) exists too.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
