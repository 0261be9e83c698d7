/**
 * Issue 25 item 4, Python: an observer of the interpreter's state (its globals' reprs, the
 * imported modules, sys.path, cwd, umask, environment, signal handlers, rlimits, builtins,
 * and the files of the places an agent writes, hashed) proves that an episode on a pooled
 * sandbox, restored after an episode that changed all of these, starts where an episode on
 * a new sandbox starts.
 */
import { describe, expect, it } from 'vitest';
import { pythonRecipe } from '../../envs/python/images.js';
import { PYTHON_LIMITS } from '../../envs/python/index.js';
import { PythonEnv } from '../../envs/python/python-env.js';
import type { Task } from '../../src/datasets/index.js';
import { DEFAULT_CAPABILITIES } from '../../src/sandbox/types.js';
import { pooledVecEnv } from '../../src/vec/make-vec-env.js';
import { buildImageUnlabelled, dockerTestFile, requireEngine, skipWithoutEngine, sharedTestRuntime } from '../setup/docker.js';

const { engine } = await dockerTestFile();

const TASK: Task = {
  index: 0,
  id: 'double',
  query: 'Write a function that doubles a number.',
  gold: 'def double(x):\n    return 2 * x',
  metadata: { tests: ['assert double(2) == 4'], test_setup_code: '' },
};

/** What the interpreter and its sandbox look like, as one JSON string (the observer's own names are the same on both sides). */
const OBSERVER = `
def _observe():
    import builtins, hashlib, json, os, re, resource, signal, sys
    def shown(v):  # a repr, without the address an object happens to have
        return re.sub(r" at 0x[0-9a-f]+", " at 0x?", repr(v))
    def walk(root):
        found = []
        for d, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(files) + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
                p = os.path.join(d, name)
                try:
                    st = os.lstat(p)
                    digest = ""
                    if os.path.isfile(p) and not os.path.islink(p):
                        with open(p, "rb") as f:
                            digest = hashlib.sha256(f.read()).hexdigest()
                    found.append([p, st.st_mode, st.st_size, st.st_uid, digest, os.readlink(p) if os.path.islink(p) else ""])
                except OSError as e:
                    found.append([p, str(e)])
        return found
    mask = os.umask(0)
    os.umask(mask)
    state = {
        "globals": sorted((k, shown(v)) for k, v in globals().items() if k != "__builtins__"),
        "modules": sorted(sys.modules),
        "path": sys.path,
        "cwd": os.getcwd(),
        "umask": mask,
        "environ": sorted((k, v) for k, v in os.environ.items() if k != "HOSTNAME"),
        "signals": [shown(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGCHLD)],
        "rlimits": [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC, resource.RLIMIT_FSIZE)],
        "builtins": sorted((k, shown(v)) for k, v in vars(builtins).items() if k not in ("_", "__loader__", "__spec__")),
        "files": [walk(r) for r in ("/tmp", "/root", "/home", "/opt", "/var/tmp", "/etc", "/usr/lib/python3.11/json", "/usr/local")],
        "processes": len([p for p in os.listdir("/proc") if p.isdigit()]),
    }
    return json.dumps(state)
print(_observe())`;

/** An episode that changes everything the observer looks at. */
const CHANGES = [
  'import os, sys, signal, resource, builtins, json, xml.dom.minidom, sqlite3',
  'leftover = [1, 2, 3]\nsys.path.insert(0, "/tmp/lib")\nos.makedirs("/tmp/lib", exist_ok=True)\nopen("/tmp/lib/evil.py", "w").write("X = 1")\nimport evil',
  'os.chdir("/tmp")\nos.umask(0o077)\nos.environ["INJECTED"] = "1"\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nresource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))',
  'open("/root/.bashrc", "a").write("echo pwned\\n")\nopen("/etc/ld.so.preload", "w").write("")\nopen("/usr/lib/python3.11/json/__init__.py", "a").write("\\nPATCHED = 1\\n")\nos.makedirs("/usr/local/lib/python3.11/dist-packages", exist_ok=True)\nopen("/usr/local/lib/python3.11/dist-packages/sitecustomize.py", "w").write("import builtins; builtins.PWNED = 1")',
  // Last: with exec replaced, the interpreter runs no further action.
  'builtins.injected = 1\nbuiltins.exec = lambda *a, **k: None',
];

describe.skipIf(skipWithoutEngine(engine, 'python observer'))('a pooled Python sandbox, observed', () => {
  it('after an episode that changed the interpreter and its files, the sandbox the pool hands out next (restored in place, or replaced where the episode wrote files) is observed as a new one', async () => {
    const image = await buildImageUnlabelled(requireEngine(engine), await pythonRecipe());
    const make = () =>
      new PythonEnv({
        runtime: sharedTestRuntime(requireEngine(engine)),
        spec: { image, hostname: 'intercode', limits: PYTHON_LIMITS, capabilities: DEFAULT_CAPABILITIES },
        dataset: [TASK],
        session: { timeoutMs: 10_000 },
      });
    const fresh = make();
    const pooled = make();
    const { vec, pool } = pooledVecEnv([pooled], { autoreset: 'disabled', pool: { minIdle: 0 } });
    try {
      await fresh.reset({ task: 0 });
      const reference = (await fresh.step(OBSERVER)).observation;
      expect(reference).toContain('"globals"');
      const observed: string[] = [];
      for (let i = 0; i < 3; i++) {
        await pooled.reset({ task: 0 });
        observed.push((await pooled.step(OBSERVER)).observation);
        for (const change of CHANGES.slice(0, -1)) await pooled.step(change);
        // The changes took: the same observer now sees something else.
        const changed = (await pooled.step(OBSERVER)).observation;
        expect(JSON.parse(changed)).not.toEqual(JSON.parse(reference));
        await pooled.step(CHANGES.at(-1)!);
        await pooled.step('skip');
      }
      for (const seen of observed) expect(JSON.parse(seen)).toEqual(JSON.parse(reference));
      // Each used sandbox went back to the pool: restored in place, or removed and replaced by a new one.
      const { restored, removed } = pool.stats();
      expect(restored + removed).toBeGreaterThanOrEqual(2);
    } finally {
      await vec.close();
      await fresh.close();
    }
  }, 300_000);
});
