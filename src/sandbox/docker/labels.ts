import { hostname } from 'node:os';
import { isMainThread, threadId } from 'node:worker_threads';
import { OWNER_LABEL, OWNER_VALUE, RUN_LABEL, TEST_LABEL, THREAD_LABEL } from '../../labels.js';

export { OWNER_LABEL, OWNER_VALUE, RUN_LABEL, IMAGE_LABEL, CHANNEL_LABEL, THREAD_LABEL, TEST_LABEL } from '../../labels.js';

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
