/**
 * The episode-root runtime's pure parts: the plan (OCI mount options as runc splits them, and
 * no field that could break the helper's line format) and the helper's framing (replies split
 * across reads, exit events before a reply, a NUL refused, a dropped connection failing every
 * request still waiting).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HelperClient, HelperRefusal } from '../../src/sandbox/roots/helper-client.js';
import { parseLimits } from '../../src/sandbox/roots/reference-container.js';
import { mountFlags, rootPlan, type OciSpec } from '../../src/sandbox/roots/root-plan.js';

const frame = (...fields: string[]) => {
  const body = Buffer.from(fields.map((f) => `${f}\0`).join(''));
  const head = Buffer.alloc(4);
  head.writeUInt32LE(body.length);
  return Buffer.concat([head, body]);
};

describe('the root plan', () => {
  it('splits OCI mount options into flags, propagation and data as runc does', () => {
    expect(mountFlags(['nosuid', 'noexec', 'nodev', 'ro'])).toEqual({ flags: 1 | 2 | 4 | 8, propagation: 0, data: '' });
    expect(mountFlags(['rbind', 'ro', 'rprivate'])).toEqual({ flags: 4096 | 16384 | 1, propagation: (1 << 18) | 16384, data: '' });
    expect(mountFlags(['nosuid', 'strictatime', 'mode=755', 'size=65536k', 'rw'])).toEqual({ flags: 2 | (1 << 24), propagation: 0, data: 'mode=755,size=65536k' });
  });

  it('reads a process\'s resource limits in resource order, and plans each (the pool\'s own open-files limit is not a container\'s)', () => {
    const limits = [
      'Limit                     Soft Limit           Hard Limit           Units     ',
      'Max cpu time              unlimited            unlimited            seconds   ',
      'Max file size             1073741824           1073741824           bytes     ',
      'Max open files            20000                20000                files     ',
      'Max realtime timeout      unlimited            unlimited            us        ',
      '',
    ].join('\n');
    const rlimits = parseLimits(limits);
    expect(rlimits).toEqual([{ soft: 'unlimited', hard: 'unlimited' }, { soft: '1073741824', hard: '1073741824' }, { soft: '20000', hard: '20000' }, { soft: 'unlimited', hard: 'unlimited' }]);
    expect(() => parseLimits('Limit\nMax open files  lots  lots  files')).toThrow(/unexpected/);
    const spec: OciSpec = { process: { args: ['/sbin/docker-init'], env: [] }, hostname: 'h', mounts: [], linux: {} };
    const plan = rootPlan({ spec, imageLayers: ['/l/a'], initEntries: [], cgroups: [], idlePid: 7, execGap: 5, mountModes: [], devices: [], harnessCapability: 'SETPCAP', rlimits });
    expect(plan.split('\n').filter((line) => line.startsWith('rlimit\t'))).toEqual(['rlimit\t0\tunlimited\tunlimited', 'rlimit\t1\t1073741824\t1073741824', 'rlimit\t2\t20000\t20000', 'rlimit\t3\tunlimited\tunlimited']);
  });

  it('refuses a field that holds a tab or a newline (it would forge a plan line)', () => {
    const spec: OciSpec = { process: { args: ['/sbin/docker-init'], env: ['A=1\ncap\tSYS_ADMIN'] }, hostname: 'h', mounts: [], linux: {} };
    const inputs = { spec, imageLayers: ['/l/a'], initEntries: [], cgroups: [], idlePid: 7, execGap: 5, mountModes: [], devices: [], harnessCapability: 'SETPCAP', rlimits: [] };
    expect(() => rootPlan(inputs)).toThrow(/tab, newline or NUL/);
    expect(rootPlan({ ...inputs, spec: { ...spec, process: { ...spec.process, env: ['A=1'] } } })).toMatch(/^env\tA=1$/m);
  });
});

describe('the helper client', () => {
  let server: Server | undefined;
  let dir: string | undefined;
  afterEach(() => {
    server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const serve = async (onData: (socket: Socket, chunk: Buffer) => void) => {
    dir = mkdtempSync(join(tmpdir(), 'helper-client-'));
    const path = join(dir, 'sock');
    server = createServer((socket) => socket.on('data', (chunk) => onData(socket, chunk)));
    await new Promise<void>((resolve) => server!.listen(path, resolve));
    return HelperClient.connect(path, 2_000);
  };

  it('reads replies split across reads, and exits reported before the reply', async () => {
    const client = await serve((socket) => {
      const bytes = Buffer.concat([frame('X', '42', '3'), frame('R', '1', 'ok', '42')]);
      socket.write(bytes.subarray(0, 5));
      setTimeout(() => socket.write(bytes.subarray(5)), 20);
    });
    expect(await client.request('L', 'id')).toBe('42');
    expect(await client.exitOf(42)).toBe(3);
    client.close();
  });

  it('turns an error reply into a HelperRefusal and refuses a field with a NUL', async () => {
    const client = await serve((socket) => socket.write(frame('R', '1', 'err', 'no such root')));
    await expect(client.request('K', 'x')).rejects.toThrow(HelperRefusal);
    expect(() => client.request('L', 'a\0b')).toThrow(RangeError);
    client.close();
  });

  it('fails every waiting request and exit when the helper goes away', async () => {
    let helper: Socket | undefined;
    const client = await serve((socket) => {
      helper = socket;
      socket.write(frame('R', '1', 'ok', '7'));
    });
    expect(await client.request('L', 'id')).toBe('7');
    const exit = client.exitOf(7);
    helper!.destroy();
    await expect(exit).rejects.toThrow();
    expect(client.alive).toBe(false);
    await expect(client.request('K', 'id')).rejects.toThrow();
    await expect(client.exitOf(8)).rejects.toThrow();
  });

  it('keeps this process alive while a request or an exit waits, and only then', async () => {
    let helper: Socket | undefined;
    const client = await serve((socket, chunk) => {
      helper = socket;
      socket.unref(); // only the client's socket is counted below
      if (chunk.includes('L\0')) socket.write(frame('R', '1', 'ok', '9'));
    });
    server!.unref();
    const pipes = () => process.getActiveResourcesInfo().filter((kind) => kind === 'PipeWrap').length;
    const request = client.request('L', 'id');
    const waiting = pipes();
    expect(await request).toBe('9');
    const idle = pipes();
    expect(waiting, 'a request awaited holds the process').toBeGreaterThan(idle);
    const exit = client.exitOf(9);
    expect(pipes(), 'an exit awaited holds the process').toBe(idle + 1);
    helper!.write(frame('X', '9', '0'));
    expect(await exit).toBe(0);
    expect(pipes(), 'idle after the exit').toBe(idle);
    client.close();
  });
});
