/**
 * The pieces an episode lives in, without Docker: the ledger every env kind keeps (and how
 * it says an episode ended), the truncation rules and their order, the lease that hands a workspace
 * back to the source that lent it, and the checkpoint flow every env kind saves through.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Task } from '../../src/datasets/index.js';
import { EpisodeCheckpoints, forkEpisode, type Checkpointer } from '../../src/env/checkpoint/index.js';
import { EpisodeLedger } from '../../src/env/episode-ledger.js';
import { failedStepEnd, SCORER_SHELL_BREACHED, truncatedStep, untrustedEnd } from '../../src/env/truncation.js';
import { CheckpointError, ConfigError, EnvStateError, EpisodeUnscorableError, SandboxError } from '../../src/errors.js';
import type { Workspace, WorkspaceSource } from '../../src/pool/types.js';
import { WorkspaceLease } from '../../src/pool/workspace-lease.js';
import type { Sandbox } from '../../src/sandbox/types.js';

const TASK: Task = { index: 3, id: '3', query: 'list the files', gold: 'ls', metadata: {} };

describe('EpisodeLedger', () => {
  it('keeps the task, steps and last observation; says how the episode ended until the next begins, nothing when it stops', () => {
    const ledger = new EpisodeLedger();
    expect(ledger.ended).toBe(true);
    ledger.begin(TASK, TASK.query);
    expect([ledger.ended, ledger.lastObservation]).toEqual([false, 'list the files']);
    ledger.record('ls', 'a\nb\n');
    const snapshot = ledger.snapshot();
    ledger.record('pwd', '/\n');
    // A snapshot is a copy: the ledger goes on without changing it.
    expect(snapshot.steps).toEqual([{ action: 'ls', observation: 'a\nb\n' }]);
    expect(ledger.lastObservation).toBe('/\n');
    expect(ledger.endedEpisode).toBeUndefined();
    ledger.end(1, { reward: { score: 1 } });
    expect(ledger.ended).toBe(true);
    expect(ledger.endedEpisode).toEqual({ task: TASK, steps: [{ action: 'ls', observation: 'a\nb\n' }, { action: 'pwd', observation: '/\n' }], reward: 1, info: { reward: { score: 1 } } });
    ledger.begin(TASK, TASK.query);
    expect(ledger.endedEpisode).toBeUndefined();
    ledger.stop();
    expect(ledger.ended).toBe(true);
    expect(ledger.endedEpisode).toBeUndefined();
  });

  it('continues a snapshot with its steps copied, and has no ended episode for one without a task', () => {
    const ledger = new EpisodeLedger();
    const steps = [{ action: 'SELECT 1', observation: '[(1,)]' }];
    ledger.continueFrom({ task: TASK, steps, lastObservation: '[(1,)]' });
    ledger.record('SELECT 2', '[(2,)]');
    expect(steps).toHaveLength(1);
    expect(ledger.steps).toHaveLength(2);
    ledger.end(null, { truncated: 'lost' });
    expect(ledger.endedEpisode?.steps).toHaveLength(2);
    ledger.begin(null, '');
    ledger.end(0, {});
    expect(ledger.endedEpisode).toBeUndefined();
  });
});

describe('truncation rules', () => {
  const sandbox = (overLimit?: number) => ({ disk: { limitBytes: 100, exceededNow: async () => overLimit } }) as unknown as Sandbox;

  it('a forged protocol line and a write past the disk limit make a step untrustworthy; other events do not', () => {
    expect(untrustedEnd([{ kind: 'timed-out', afterMs: 5 }])).toBeUndefined();
    expect(untrustedEnd([{ kind: 'protocol-violation', detail: 'forged marker' }])).toEqual({ reason: 'protocol-violation', message: 'forged marker' });
    expect(untrustedEnd([{ kind: 'disk-limit', usedBytes: 200, limitBytes: 100 }])?.reason).toBe('disk-limit');
  });

  it('a failed step is cut off for the first cause in order: unscorable, scorer shell breached, over the disk, state unreadable, sandbox lost', async () => {
    const lost = new SandboxError('SANDBOX_LOST', 'container gone');
    expect((await failedStepEnd(new EpisodeUnscorableError('verifier-timeout', 'verifier timed out'), sandbox(200), true, 'last'))?.truncation.reason).toBe('verifier-timeout');
    expect((await failedStepEnd(lost, sandbox(200), true, 'last'))?.truncation).toEqual(SCORER_SHELL_BREACHED);
    const overDisk = await failedStepEnd(lost, sandbox(200), false, 'last');
    expect(overDisk?.truncation.reason).toBe('disk-limit');
    expect(overDisk?.observation).toMatch(/^\[intercode: the sandbox's processes were stopped: /);
    expect((await failedStepEnd(new SandboxError('STATE_UNREADABLE', 'probe cut'), sandbox(), false, 'last'))?.truncation.reason).toBe('state-unreadable');
    expect((await failedStepEnd(lost, sandbox(), false, 'last'))?.truncation).toEqual({ reason: 'sandbox-lost', message: 'container gone' });
    // Not a sandbox's nor a scorer's: a bug, thrown by the caller.
    expect(await failedStepEnd(new Error('bug'), sandbox(), false, 'last')).toBeUndefined();
  });

  it('a cut-off step is truncated, not terminated, with reward 0 and its cause', () => {
    const step = truncatedStep({ observation: 'o', truncation: SCORER_SHELL_BREACHED, info: { exitCode: 0 } });
    expect(step).toMatchObject({ observation: 'o', reward: 0, terminated: false, truncated: true, info: { actionExecuted: false, exitCode: 0, truncation: SCORER_SHELL_BREACHED } });
  });
});

/** A source that counts what it lends and gets back. */
function countingSource() {
  const released: Workspace[] = [];
  let closed = 0;
  let made = 0;
  const workspace = (): Workspace => {
    made += 1;
    return { sandbox: { destroy: async () => undefined } as unknown as Sandbox, runner: { close() {} } as Workspace['runner'], control: { close() {} } as unknown as Workspace['control'] };
  };
  const source: WorkspaceSource = {
    acquire: async () => workspace(),
    release: (w) => void released.push(w),
    close: async () => void (closed += 1),
  };
  return { source, released, workspace, counts: () => ({ made, closed }) };
}

describe('WorkspaceLease', () => {
  it('hands each workspace back to the source that lent it, removes one no source owns, and closes only a source it owns', async () => {
    const first = countingSource();
    const lease = new WorkspaceLease(first.source);
    const a = await lease.take();
    const b = await lease.take();
    expect(first.released).toEqual([a]);
    const shared = countingSource();
    lease.use(shared.source, false);
    // Switching sources hands back the workspace held, and closes the old source the lease owned.
    expect(first.released).toEqual([a, b]);
    expect(first.counts().closed).toBe(1);
    const c = await lease.take();
    let destroyed = 0;
    const restored: Workspace = { ...first.workspace(), sandbox: { destroy: async () => void (destroyed += 1) } as unknown as Sandbox };
    lease.hold({ workspace: restored, returnTo: null });
    expect(shared.released).toEqual([c]);
    lease.retire();
    expect(destroyed).toBe(1);
    expect(shared.released).toEqual([c]);
    await lease.close();
    expect(shared.counts().closed).toBe(0);
  });
});

describe('EpisodeCheckpoints', () => {
  /** A checkpointer of a number, which writes it to the handle's folder. */
  const numbers: Checkpointer<number, { value: number; file: string }> = {
    async save(live, _episode, dir) {
      if (live < 0) throw new CheckpointError('CHECKPOINT_REFUSED', 'negative', { details: { reason: 'negative' } });
      mkdirSync(dir, { recursive: true });
      const file = join(dir, 'value');
      writeFileSync(file, String(live));
      return { part: { value: live, file }, info: { layer: { paths: 1, bytes: 1, archiveBytes: 1 }, dropped: { processes: [], shellValues: [] } } };
    },
    async load(state) {
      return Number(readFileSync(state.file, 'utf8'));
    },
  };
  const kept = { task: TASK, steps: [{ action: 'a', observation: 'b' }], lastObservation: 'b' };

  it('saves the part with the bookkeeping, checks the env kind and that the handle lives, and removes its files on release', async () => {
    const checkpoints = new EpisodeCheckpoints(() => 'intercode/test-v1');
    const handle = await checkpoints.save(numbers, 7, kept);
    expect(handle.envId).toBe('intercode/test-v1');
    expect(handle.info.steps).toBe(1);
    expect(handle.state).toMatchObject({ task: TASK, lastObservation: 'b', value: 7 });
    expect(await numbers.load(checkpoints.stateOf(handle))).toBe(7);
    const other = new EpisodeCheckpoints(() => 'intercode/other-v1');
    expect(() => other.stateOf(handle)).toThrow(EnvStateError);
    checkpoints.release(handle);
    expect(existsSync(handle.state.file)).toBe(false);
    expect(() => checkpoints.stateOf(handle)).toThrow(/was released/);
    checkpoints.close();
  });

  it('a refused save leaves no handle and no folder; fork is all or none', async () => {
    const checkpoints = new EpisodeCheckpoints(() => 'intercode/test-v1');
    await expect(checkpoints.save(numbers, -1, kept)).rejects.toThrow(CheckpointError);
    const env = { checkpoint: () => checkpoints.save(numbers, 5, kept), releaseCheckpoint: (c: Parameters<typeof checkpoints.release>[0]) => checkpoints.release(c) };
    let closed = 0;
    let restores = 0;
    const child = (fails: boolean) => ({
      restore: async () => {
        restores += 1;
        if (fails) throw new CheckpointError('CHECKPOINT_REFUSED', 'child refused');
      },
      close: async () => void (closed += 1),
    });
    await expect(forkEpisode(env, 0, () => child(false))).rejects.toThrow(ConfigError);
    let made = 0;
    await expect(forkEpisode(env, 3, () => child(++made === 2))).rejects.toThrow('child refused');
    expect([restores, closed]).toEqual([3, 3]);
    expect(await forkEpisode(env, 2, () => child(false))).toHaveLength(2);
    checkpoints.close();
  });
});
