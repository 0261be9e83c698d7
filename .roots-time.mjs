import Docker from 'dockerode';
import { readFileSync } from 'node:fs';
const M = '/work/main/dist/src';
const { EpisodeRootRuntime } = await import(`${M}/sandbox/roots/root-runtime.js`);
const { DEFAULT_LIMITS, DEFAULT_CAPABILITIES } = await import(`${M}/sandbox/types.js`);
const { cleanup } = await import(`${M}/sandbox/docker/cleanup.js`).catch(() => ({}));
const docker = new Docker({ socketPath: '/var/run/docker.sock' });
const kind = process.argv[2] ?? 'episode-roots';
const N = Number(process.argv[3] ?? 100);
const spec = { image: 'intercode-ts/bash-testbed:5cdbc8e03071107d', hostname: 'intercode', limits: DEFAULT_LIMITS, capabilities: DEFAULT_CAPABILITIES };
let runtime;
if (kind === 'episode-roots') runtime = new EpisodeRootRuntime(docker, {});
else { const { DockerRuntime } = await import(`${M}/sandbox/docker/docker-runtime.js`); runtime = new DockerRuntime(docker, {}); }
const busy = () => { const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number); return (f[0]+f[1]+f[2]+f[5]+f[6]+f[7]) * 10; };
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(2); };
// warm up (pool container, helper)
for (let i = 0; i < 5; i++) { const s = await runtime.create(spec); await s.exec(['true']); await s.destroy(); }
await new Promise((r) => setTimeout(r, 2000));
const create = [], ready = [], destroy = [];
const b0 = busy(); const c0 = process.cpuUsage(); const t0 = performance.now();
for (let i = 0; i < N; i++) {
  const a = performance.now();
  const s = await runtime.create(spec);
  const b = performance.now();
  await s.exec(['true']);
  const c = performance.now();
  await s.destroy();
  const d = performance.now();
  create.push(b - a); ready.push(c - a); destroy.push(d - c);
}
const wall = performance.now() - t0;
await new Promise((r) => setTimeout(r, 3000)); // folder removals and engine work after the loop
const b1 = busy(); const c1 = process.cpuUsage(c0);
console.log(JSON.stringify({ kind, N, createP50: pct(create, .5), readyP50: pct(ready, .5), readyP99: pct(ready, .99), destroyP50: pct(destroy, .5), wallPerSandboxMs: (wall / N).toFixed(2), hostCpuMsPerSandbox: ((b1 - b0) / N).toFixed(2), nodeCpuMsPerSandbox: ((c1.user + c1.system) / 1000 / N).toFixed(2) }));
await runtime.close?.();
process.exit(0);
