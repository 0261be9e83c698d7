/**
 * The vec bench's transfer comparison (`--transfer`): how a shard's answers cross from a
 * worker thread to the main thread — structured clone (postMessage of the object) or
 * msgpackr (packed, its buffer transferred, unpacked) — measured in one run, interleaved:
 * round trips per second with 8 in flight, and main-thread CPU per round trip.
 */
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { Packr } from 'msgpackr';
import { ConfigError } from '../src/errors.js';
import { packagePath } from '../src/package-path.js';
import { mainThreadCpuMs } from './vec-threads.js';

export type TransferMethod = 'clone' | 'msgpackr';

export interface TransferResult {
  /** Per method: round trips/s and main-thread µs of CPU per round trip (medians of the rounds). */
  methods: Record<TransferMethod, { roundTripsPerSec: number; mainThreadCpuUsPerRoundTrip: number }>;
  rounds: number;
  secondsPerRound: number;
}

const IN_FLIGHT = 8;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function measure(worker: Worker, how: TransferMethod, ms: number): Promise<{ perSec: number; cpuUs: number }> {
  const packr = new Packr({ structuredClone: false });
  let done = 0;
  let next = 0;
  const end = performance.now() + ms;
  const cpu0 = mainThreadCpuMs();
  const t0 = performance.now();
  await new Promise<void>((resolve) => {
    let inFlight = 0;
    const send = () => {
      const id = next++;
      inFlight += 1;
      if (how === 'clone') worker.postMessage({ id, how, request: { op: 'step', env: 0, action: 'ls -l' } });
      else {
        const packed = new Uint8Array(packr.pack({ id, op: 'step', env: 0, action: 'ls -l' }));
        worker.postMessage({ id, how, packed }, [packed.buffer]);
      }
    };
    const onMessage = (message: { id?: number; packed?: Uint8Array; value?: { observation: string } }) => {
      const answer = (how === 'msgpackr' ? packr.unpack(message.packed!) : message) as { value: { observation: string } };
      if (answer.value.observation.length === 0) throw new Error('empty answer');
      done += 1;
      inFlight -= 1;
      if (performance.now() < end) send();
      else if (inFlight === 0) {
        worker.off('message', onMessage);
        resolve();
      }
    };
    worker.on('message', onMessage);
    for (let i = 0; i < IN_FLIGHT; i++) send();
  });
  const seconds = (performance.now() - t0) / 1000;
  return { perSec: done / seconds, cpuUs: ((mainThreadCpuMs() - cpu0) * 1000) / done };
}

/** Both methods, `rounds` times each, alternating. @throws ConfigError without a build. */
export async function compareTransfer(rounds: number, secondsPerRound: number): Promise<TransferResult> {
  const filename = packagePath('dist', 'bench', 'transfer-echo.js');
  if (!existsSync(filename)) throw new ConfigError('--transfer', `runs compiled code and ${filename} is missing; run \`npm run build\``);
  const worker = new Worker(filename);
  try {
    const samples: Record<TransferMethod, { perSec: number[]; cpuUs: number[] }> = { clone: { perSec: [], cpuUs: [] }, msgpackr: { perSec: [], cpuUs: [] } };
    for (let r = 0; r < rounds; r++) {
      for (const how of (r % 2 === 0 ? ['clone', 'msgpackr'] : ['msgpackr', 'clone']) as TransferMethod[]) {
        const once = await measure(worker, how, secondsPerRound * 1000);
        samples[how].perSec.push(once.perSec);
        samples[how].cpuUs.push(once.cpuUs);
      }
    }
    const summary = (how: TransferMethod) => ({ roundTripsPerSec: Math.round(median(samples[how].perSec)), mainThreadCpuUsPerRoundTrip: Number(median(samples[how].cpuUs).toFixed(2)) });
    return { methods: { clone: summary('clone'), msgpackr: summary('msgpackr') }, rounds, secondsPerRound };
  } finally {
    await worker.terminate();
  }
}
