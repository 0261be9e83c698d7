/**
 * The scorer counts the processes a test left once each (envs/python/sandbox_common.py's
 * kill_strays). A process killed by one pass may still be exiting at the next (on a loaded
 * host, or in an episode root): counted again, a submission that forked one child was told
 * it left two (seen once in CI's episode-roots pass). Run with the host's python3 over the
 * module's own source, with the process table and the kill stubbed: one process that stays
 * alive through both calls.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-path.js';

const PROGRAM = `
import sys
ns = {'__name__': 'sandbox_common'}
exec(open(sys.argv[1]).read(), ns)
ns['descendants'] = lambda root: [(4242, 'S')]
ns['_kill'] = lambda pid, sig: None
killed = set()
shared = [ns['kill_strays'](1, {1}, killed), ns['kill_strays'](1, {1}, killed)]
apart = ns['kill_strays'](1, {1}) + ns['kill_strays'](1, {1})
print(shared[0], shared[1], apart)
`;

describe('kill_strays', () => {
  it('counts a process still exiting from an earlier call once, when the calls share their set', () => {
    const run = spawnSync('/usr/bin/python3', ['-c', PROGRAM, packagePath('envs', 'python', 'sandbox_common.py')], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    // Shared: 1 after each call. Apart: each call counts it (what the scorer did before).
    expect(run.stdout.trim()).toBe('1 1 2');
  });
});
