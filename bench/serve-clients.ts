/**
 * The serve bench's clients: N WebSocket sessions, each in a closed loop against the
 * server (send, wait for the reply, send the next). Runs in a worker thread (see
 * serve-bench.ts) so the server's event loop serves only; {@link runClients} is the work.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { WebSocket } from 'ws';

export interface ClientsJob {
  url: string;
  sessions: number;
  phase: 'trivial' | 'gold';
  warmupMs: number;
  durationMs: number;
  /** Gold phase: each task's index and gold command, taken in turn. */
  golds: { taskId: number; gold: string }[];
}

export interface ClientsResult {
  /** Latencies (ms) of the counted requests: trivial steps, or every request of the gold phase. */
  latencies: number[];
  episodes: number;
  belowOne: number;
}

interface Reply {
  type: string;
  data: { reward?: number | null; done?: boolean; observation?: { output?: string }; message?: string };
}

/** One session: a request at a time, each resolved with its reply. */
async function open(url: string): Promise<{ request: (message: object) => Promise<Reply>; close: () => void }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`, { perMessageDeflate: false });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  let pending: ((reply: Reply) => void) | undefined;
  ws.on('message', (data) => pending?.(JSON.parse(String(data)) as Reply));
  return {
    request: (message) =>
      new Promise((resolve) => {
        pending = resolve;
        ws.send(JSON.stringify(message));
      }),
    close: () => ws.close(),
  };
}

/** Runs `job.sessions` sessions in closed loops for the warm-up and the measured window. */
export async function runClients(job: ClientsJob): Promise<ClientsResult> {
  const start = performance.now() + job.warmupMs;
  const end = start + job.durationMs;
  const result: ClientsResult = { latencies: [], episodes: 0, belowOne: 0 };
  let next = 0;
  const timed = async (session: Awaited<ReturnType<typeof open>>, message: object) => {
    const sent = performance.now();
    const reply = await session.request(message);
    const now = performance.now();
    if (reply.type === 'error') throw new Error(`server error: ${reply.data.message}`);
    return { reply, latency: now - sent, counted: now >= start && now < end };
  };
  await Promise.all(
    Array.from({ length: job.sessions }, async () => {
      const session = await open(job.url);
      try {
        if (job.phase === 'trivial') {
          await session.request({ type: 'reset', data: {} });
          while (performance.now() < end) {
            const { reply, latency, counted } = await timed(session, { type: 'step', data: { code: 'echo hi' } });
            if (reply.data.observation?.output !== 'hi\n') throw new Error(`echo hi gave ${JSON.stringify(reply.data.observation?.output)}`);
            if (counted) result.latencies.push(latency);
          }
          return;
        }
        while (performance.now() < end) {
          const { taskId, gold } = job.golds[next++ % job.golds.length]!;
          await timed(session, { type: 'reset', data: { task_id: taskId } });
          await timed(session, { type: 'step', data: { code: gold } });
          const { reply, counted } = await timed(session, { type: 'step', data: { code: 'submit' } });
          if (counted) {
            result.episodes += 1;
            if ((reply.data.reward ?? 0) < 1) result.belowOne += 1;
          }
        }
      } finally {
        session.close();
      }
    }),
  );
  return result;
}

if (parentPort && (workerData as { serveBenchClients?: ClientsJob } | undefined)?.serveBenchClients) {
  const port = parentPort;
  runClients((workerData as { serveBenchClients: ClientsJob }).serveBenchClients).then(
    (result) => port.postMessage({ ok: true, result }),
    (error: unknown) => port.postMessage({ ok: false, error: error instanceof Error ? error.message : String(error) }),
  );
}
