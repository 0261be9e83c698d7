import { hostname } from 'node:os';
import { isMainThread, threadId } from 'node:worker_threads';

/** Labels on every container and image the project creates, so cleanup can find them. */
export const OWNER_LABEL = 'io.intercode-ts.owner';
export const OWNER_VALUE = 'intercode-ts';
/** Identifies the process (pid@host) that created a container, for crash reaping. */
export const RUN_LABEL = 'io.intercode-ts.run';
/** Marks images built by the project, with the env name they serve. */
export const IMAGE_LABEL = 'io.intercode-ts.image';
/** On containers with a host channel directory (FIFO transport): its path, removed with the container. */
export const CHANNEL_LABEL = 'io.intercode-ts.channel';
/** On containers a worker thread made (a threaded VecEnv's shard): its threadId, so the main thread can remove them if it dies. */
export const THREAD_LABEL = 'io.intercode-ts.thread';
/** Marks containers and images made by tests, so a test run can remove all of them. */
export const TEST_LABEL = 'io.intercode-ts.test';

/** This process's {@link RUN_LABEL} value: `pid@host`, host as the OS names it. */
export function runLabelValue(pid: number = process.pid): string {
  return `${pid}@${hostname()}`;
}

/** The engine's list filter for this process's containers. */
export function thisRunFilter(): { label: string[] } {
  return { label: [`${RUN_LABEL}=${runLabelValue()}`] };
}

export function ownerLabels(): Record<string, string> {
  const labels: Record<string, string> = {
    [OWNER_LABEL]: OWNER_VALUE,
    [RUN_LABEL]: runLabelValue(),
  };
  const testRun = process.env.INTERCODE_TEST_RUN;
  if (testRun) labels[TEST_LABEL] = testRun;
  if (!isMainThread) labels[THREAD_LABEL] = String(threadId);
  return labels;
}
