/**
 * The two ways a persistent shell talks to us — FIFOs in a shared channel directory (the
 * default with a local engine) and the engine's attach stream (remote engines, or when the
 * channel is not shared) — behave the same for what an agent can do to its shell. The full
 * behaviour matrix runs on the default transport in shell-session.test.ts.
 */
import type Docker from 'dockerode';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DockerRuntime, type Transport } from '../../src/sandbox/docker/docker-runtime.js';
import { channelRoot } from '../../src/sandbox/docker/fifo-channel.js';
import { CHANNEL_LABEL } from '../../src/sandbox/docker/labels.js';
import { ShellSession } from '../../src/sandbox/shell/shell-session.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS } from '../../src/sandbox/types.js';
import { bashTestbedImage, dockerTestFile, requireEngine, skipWithoutEngine } from '../setup/docker.js';

const { engine } = await dockerTestFile();

describe.skipIf(skipWithoutEngine(engine, 'transport tests'))('shell transports', () => {
  let docker: Docker;
  let image: string;
  beforeAll(async () => {
    docker = requireEngine(engine);
    image = await bashTestbedImage(docker);
  });

  it('a local engine gets the fifo transport, with the channel directory labelled and removed with the sandbox', async () => {
    const runtime = new DockerRuntime(docker);
    const sandbox = await runtime.create({ image, hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES });
    expect(runtime.activeTransport).toBe('fifo');
    const info = await docker.getContainer(sandbox.id).inspect();
    const dir = info.Config.Labels[CHANNEL_LABEL]!;
    expect(dir.startsWith(channelRoot())).toBe(true);
    const shell = await ShellSession.open(sandbox);
    expect((await shell.run('echo hi')).output).toBe('hi\n');
    // The FIFO names are unlinked once both ends are open: nothing an agent could reopen.
    expect(readdirSync(join(dir, 'shared')).filter((name) => !name.startsWith('.'))).toEqual([]);
    // FIFOs made ahead are kept where the sandbox cannot see them, and it cannot write to its channel.
    expect(readdirSync(join(dir, 'spare')).length).toBeGreaterThan(0);
    const write = await shell.run('ls -A /run/intercode; touch /run/intercode/x');
    expect(write.exitCode).not.toBe(0);
    expect(write.output).toContain('Read-only file system');
    shell.close();
    await sandbox.destroy();
    expect(existsSync(dir)).toBe(false);
  });

  it('a shell started through a control shell has a process group of its own: its `kill -9 0` spares the control shell', async () => {
    const runtime = new DockerRuntime(docker);
    const sandbox = await runtime.create({ image, hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES });
    try {
      const control = await ShellSession.open(sandbox);
      sandbox.launchThrough?.(control);
      const agent = await ShellSession.open(sandbox);
      const groups = (await agent.run('ps -o pgid= -p $$ -p $PPID')).output.trim().split(/\s+/);
      expect(new Set(groups).size).toBe(2);
      const killed = await agent.run('kill -9 0');
      expect(killed.events.map((e) => e.kind)).toContain('shell-restarted');
      expect((await control.run('echo control alive')).output).toBe('control alive\n');
      expect((await agent.run('echo agent back')).output).toBe('agent back\n');
      agent.close();
      control.close();
    } finally {
      await sandbox.destroy();
    }
  });

  for (const transport of ['fifo', 'attach'] as Transport[]) {
    describe(transport, () => {
      it('keeps state, returns exit codes and binary-safe output, respawns after exit and kill -9 $$, and kills a command past its time limit', async () => {
        const runtime = new DockerRuntime(docker, { transport });
        const sandbox = await runtime.create({ image, hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES });
        try {
          const shell = await ShellSession.open(sandbox, { timeoutMs: 1_500 });
          await shell.run('cd /tmp && X=kept');
          expect((await shell.run('echo "$X $PWD"; false')).output).toBe('kept /tmp\n');
          expect((await shell.run('false')).exitCode).toBe(1);
          expect((await shell.run("printf '\\xff\\x00ok'")).output).toBe('\ufffd\u0000ok');
          const exited = await shell.run('exit 3');
          expect(exited.events.map((e) => e.kind)).toContain('shell-restarted');
          expect((await shell.run('pwd')).output).toBe('/tmp\n');
          const killed = await shell.run('kill -9 $$');
          expect(killed.events.map((e) => e.kind)).toContain('shell-restarted');
          const slow = await shell.run('echo partial; sleep 30');
          expect(slow.events.map((e) => e.kind)).toContain('timed-out');
          expect(slow.output).toContain('partial');
          expect((await shell.run('echo still here')).output).toBe('still here\n');
          shell.close();
        } finally {
          await sandbox.destroy();
        }
      });
    });
  }
});
