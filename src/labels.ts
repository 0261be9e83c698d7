/**
 * The names of the labels the project puts on what it creates in an engine (containers,
 * images, pods): images are labelled by their builder, sandboxes by their backends, and
 * cleanup finds both by them. Values for this process: src/sandbox/docker/labels.ts.
 */
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
