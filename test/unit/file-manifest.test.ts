/**
 * The in-pod file listing the Kubernetes restore reads comes from the pod's own tools, which
 * the agent can replace: what the harness unpacks from it is bounded, and a normal listing
 * is read whole (mount points left out).
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { takeManifest } from '../../src/sandbox/file-manifest.js';
import type { ExecResult, Sandbox } from '../../src/sandbox/types.js';

/** A sandbox whose every exec answers `output` with exit code 0. */
const answering = (output: Buffer) => ({ exec: async (): Promise<ExecResult> => ({ exitCode: 0, output, timedOut: false, durationMs: 0 }) }) as unknown as Sandbox;

describe('takeManifest', () => {
  it('reads a gzipped listing: paths with their entries, mount points and / left out', async () => {
    const listing = Buffer.from('/\0/proc\0\x01\0d 755 0 0 4096 1 1 2\0/\0\0f 644 0 0 3 1.5 1.5 7\0/etc/x\0\0d 555 0 0 0 1 1 9\0/proc\0\0');
    const manifest = await takeManifest(answering(gzipSync(listing)));
    expect([...manifest]).toEqual([['/etc/x', 'f 644 0 0 3 1.5 1.5 7 ']]);
  });

  it('a gzip bomb in place of the listing fails the listing instead of unpacking past 256 MiB', async () => {
    const bomb = gzipSync(Buffer.alloc(300 * 2 ** 20), { level: 9 });
    expect(bomb.length).toBeLessThan(2 ** 20);
    await expect(takeManifest(answering(bomb))).rejects.toThrow(/does not unpack within 268435456 bytes/);
  });
});
