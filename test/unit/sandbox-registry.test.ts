import { afterEach, describe, expect, it } from 'vitest';
import { SandboxRegistry } from '../../src/sandbox/lifecycle/registry.js';
import { installShutdownHandlers, windDownOnSignal } from '../../src/sandbox/lifecycle/shutdown.js';
import { DEFAULT_CAPABILITIES, DEFAULT_LIMITS, type Sandbox } from '../../src/sandbox/types.js';

/** A sandbox whose destroy takes `delayMs`, fails when asked to, and forgets itself as runtimes do. */
function fakeSandbox(registry: SandboxRegistry, id: string, behaviour: { delayMs?: number; fails?: boolean } = {}) {
  const calls = { destroy: 0 };
  const sandbox: Sandbox = {
    id,
    spec: { image: 'none', hostname: 'h', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES },
    exec: () => Promise.reject(new Error('unused')),
    attach: () => Promise.reject(new Error('unused')),
    restartProcesses: () => Promise.reject(new Error('unused')),
    putArchive: () => Promise.reject(new Error('unused')),
    getArchive: () => Promise.reject(new Error('unused')),
    changes: () => Promise.reject(new Error('unused')),
    async destroy() {
      calls.destroy += 1;
      await new Promise((r) => setTimeout(r, behaviour.delayMs ?? 1));
      registry.forget(sandbox);
      if (behaviour.fails) throw new Error('engine gone');
    },
  };
  return { sandbox: registry.track(sandbox), calls };
}

describe('SandboxRegistry', () => {
  it('drains every sandbox once, counting failures', async () => {
    const registry = new SandboxRegistry();
    const made = [0, 1, 2, 3].map((i) => fakeSandbox(registry, `s${i}`, { fails: i === 3 }));
    expect(registry.size).toBe(4);
    expect(await registry.drain(1_000)).toEqual({ destroyed: 3, failed: 1, pending: 0 });
    expect(registry.size).toBe(0);
    expect(made.map((m) => m.calls.destroy)).toEqual([1, 1, 1, 1]);
  });

  it('removes sandboxes tracked while draining', async () => {
    const registry = new SandboxRegistry();
    fakeSandbox(registry, 'old', { delayMs: 30 });
    const drained = registry.drain(1_000);
    const late = fakeSandbox(registry, 'late', { delayMs: 5 });
    expect(registry.isDraining).toBe(true);
    const report = await drained;
    expect(late.calls.destroy).toBe(1);
    expect(registry.size).toBe(0);
    expect(report.pending).toBe(0);
  });

  it('waits for a creation under way and removes what it makes; a failed creation is let go', async () => {
    const registry = new SandboxRegistry();
    let finish!: () => void;
    const made = new Promise<ReturnType<typeof fakeSandbox>>((resolve) => {
      finish = () => resolve(fakeSandbox(new SandboxRegistry(), 'slow-start'));
    });
    const adopted = registry.adopt(made.then((m) => m.sandbox));
    const failed = registry.adopt(Promise.reject(new Error('no engine')));
    await expect(failed).rejects.toThrow('no engine');
    expect(registry.creating).toBe(1);
    const drained = registry.drain(1_000);
    setTimeout(finish, 30);
    expect(await drained).toEqual({ destroyed: 1, failed: 0, pending: 0 });
    expect((await made).calls.destroy).toBe(1);
    expect(await adopted).toBe((await made).sandbox);
    expect(registry.creating).toBe(0);
    expect(registry.size).toBe(0);
  });

  it('gives up after the time limit, reporting what is still pending', async () => {
    const registry = new SandboxRegistry();
    fakeSandbox(registry, 'slow', { delayMs: 500 });
    fakeSandbox(registry, 'fast');
    const started = performance.now();
    const report = await registry.drain(50);
    expect(performance.now() - started).toBeLessThan(400);
    expect(report).toEqual({ destroyed: 1, failed: 0, pending: 1 });
  });
});

describe('installShutdownHandlers', () => {
  let uninstall: (() => void) | undefined;
  afterEach(() => uninstall?.());

  it('drains on the first signal and exits with 128 + its number; a second signal exits at once', async () => {
    const registry = new SandboxRegistry();
    const slow = fakeSandbox(registry, 'slow', { delayMs: 200 });
    const exits: number[] = [];
    const lines: string[] = [];
    uninstall = installShutdownHandlers({ registry, timeoutMs: 1_000, log: (l) => lines.push(l), exit: (code) => void exits.push(code) });
    process.emit('SIGTERM', 'SIGTERM');
    expect(slow.calls.destroy).toBe(1);
    process.emit('SIGINT', 'SIGINT');
    expect(exits).toEqual([130]);
    await new Promise((r) => setTimeout(r, 300));
    expect(exits).toEqual([130, 143]);
    expect(registry.size).toBe(0);
    expect(lines[0]).toMatch(/SIGTERM; removing 1 sandbox/);
    // Its removal was asked of the engine already: the engine finishes it, nothing is left.
    expect(lines[1]).toBe('intercode: SIGINT again; exiting now with no sandbox left; the engine finishes the 1 removal(s) already asked');
    expect(lines[2]).toMatch(/removed 1 sandbox/);
  });

  it('a second signal counts what is left: failed removals, and creations under way as at most; not removals the engine is finishing', async () => {
    // As seen with `run bash`: 1 sandbox tracked (its removal asked) and 3 being created left 3 containers, where the line said 1.
    const registry = new SandboxRegistry();
    fakeSandbox(registry, 'removing', { delayMs: 200 });
    fakeSandbox(registry, 'broken', { fails: true });
    const finish: (() => void)[] = [];
    for (let i = 0; i < 3; i++) {
      void registry.adopt(new Promise<Sandbox>((resolve) => finish.push(() => resolve(fakeSandbox(new SandboxRegistry(), `late${i}`).sandbox))));
    }
    const exits: number[] = [];
    const lines: string[] = [];
    uninstall = installShutdownHandlers({ registry, timeoutMs: 1_000, log: (l) => lines.push(l), exit: (code) => void exits.push(code) });
    process.emit('SIGINT', 'SIGINT');
    expect(lines[0]).toBe('intercode: SIGINT; removing 2 sandbox(es) and 3 being created (press Ctrl-C again to exit at once)');
    await new Promise((r) => setTimeout(r, 20)); // the broken one's removal has failed by now
    expect(registry.onExitNow()).toEqual({ left: 1, creating: 3, removing: 1 });
    process.emit('SIGINT', 'SIGINT');
    expect(lines[1]).toBe(
      'intercode: SIGINT again; exiting now with 1 sandbox(es) left and up to 3 more whose creation was under way (`intercode cleanup --dead-only` removes them); the engine finishes the 1 removal(s) already asked',
    );
    expect(exits).toEqual([130]);
    for (const f of finish) f();
    await new Promise((r) => setTimeout(r, 300));
  });

  it('with a wind-down registered, the first signal calls it and removes nothing; the next one drains', async () => {
    const registry = new SandboxRegistry();
    const busy = fakeSandbox(registry, 'busy');
    const exits: number[] = [];
    const lines: string[] = [];
    let stops = 0;
    uninstall = installShutdownHandlers({ registry, timeoutMs: 1_000, log: (l) => lines.push(l), exit: (code) => void exits.push(code) });
    const unregister = windDownOnSignal(() => (stops += 1));
    process.emit('SIGINT', 'SIGINT');
    expect(stops).toBe(1);
    expect(busy.calls.destroy).toBe(0);
    expect(lines[0]).toMatch(/SIGINT; winding down/);
    process.emit('SIGINT', 'SIGINT');
    expect(stops).toBe(1);
    expect(busy.calls.destroy).toBe(1);
    await new Promise((r) => setTimeout(r, 50));
    expect(exits).toEqual([130]);
    unregister();
  });

  it('an unregistered wind-down is not called', () => {
    const registry = new SandboxRegistry();
    const idle = fakeSandbox(registry, 'idle');
    const exits: number[] = [];
    let stops = 0;
    uninstall = installShutdownHandlers({ registry, timeoutMs: 1_000, log: () => undefined, exit: (code) => void exits.push(code) });
    windDownOnSignal(() => (stops += 1))();
    process.emit('SIGTERM', 'SIGTERM');
    expect(stops).toBe(0);
    expect(idle.calls.destroy).toBe(1);
  });
});
