/**
 * envs/python/checked_values.py against the worst values a submission can return, run by the
 * host's python3 (no sandbox): a value that holds itself, a large list, an always-equal object
 * deep in a dict, a class whose metaclass has a __hash__ of its own. Each is walked without
 * running the submission's code; only the last two are refused.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { packagePath } from '../../src/package-path.js';

const CASES = String.raw`
trust_standard_library()
class Meta(type):
    def __hash__(cls): raise RuntimeError("the agent's code ran")
class E:
    def __eq__(s, o): return True
class M(metaclass=Meta):
    pass
selfish = []; selfish.append(selfish)
for name, value in [("self", selfish), ("large", list(range(200000))), ("deep", {1: [2, (3, {"k": E()})]}), ("meta", [M()])]:
    try:
        check_value(value); print(name, "ok")
    except UncheckedValue as e:
        print(name, "refused:", e)
`;

describe('checked_values.py', () => {
  it('walks a value that holds itself and a large list, refuses one with an always-equal object inside, never runs a metaclass hash', () => {
    const program = `${readFileSync(packagePath('envs', 'python', 'checked_values.py'), 'utf8')}\n${CASES}`;
    const output = execFileSync('python3', ['-I', '-c', program], { encoding: 'utf8' });
    expect(output.trim().split('\n')).toEqual([
      'self ok',
      'large ok',
      "deep refused: the test's value of type E is compared by the submission's own code (E.__eq__)",
      'meta ok',
    ]);
  });
});
