import { describe, expect, it } from 'vitest';
import { ClusterUnreachableError } from '../../src/errors.js';
import { RequestLimiter, transient } from '../../src/sandbox/kubernetes/cluster.js';

const status = (code: number) => Object.assign(new Error(`HTTP ${code}`), { code });
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });

describe('Kubernetes request limiter', () => {
  it('tells transient failures (429, 5xx, refused connections) from final ones', () => {
    expect([429, 500, 503].map((c) => transient(status(c)))).toEqual([true, true, true]);
    expect([400, 403, 404, 409].map((c) => transient(status(c)))).toEqual([false, false, false, false]);
    expect(transient(refused())).toBe(true);
    expect(transient(new Error('pod spec invalid'))).toBe(false);
  });

  it('retries 429 and 5xx with backoff until the call succeeds', async () => {
    const limiter = new RequestLimiter({ qps: 1000, burst: 1000, retryForMs: 10_000 });
    const failures = [status(429), status(503), status(500)];
    let calls = 0;
    const result = await limiter.run('test', async () => {
      calls += 1;
      const failure = failures.shift();
      if (failure) throw failure;
      return 'ok';
    }, 'https://127.0.0.1:6443');
    expect(result).toBe('ok');
    expect(calls).toBe(4);
  });

  it('does not retry a 404; gives up on a server that stays away with ClusterUnreachableError', async () => {
    const limiter = new RequestLimiter({ qps: 1000, burst: 1000, retryForMs: 300 });
    let calls = 0;
    await expect(limiter.run('get', async () => {
      calls += 1;
      throw status(404);
    }, 'srv')).rejects.toMatchObject({ code: 404 });
    expect(calls).toBe(1);
    const started = performance.now();
    const error = await limiter.run('list', async () => {
      throw refused();
    }, 'https://127.0.0.1:6443').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClusterUnreachableError);
    expect((error as ClusterUnreachableError).code).toBe('ENGINE_UNREACHABLE');
    expect(performance.now() - started).toBeGreaterThanOrEqual(300);
  });

  it('holds requests to the rate once the burst is spent', async () => {
    const limiter = new RequestLimiter({ qps: 50, burst: 5, retryForMs: 0 });
    const started = performance.now();
    await Promise.all(Array.from({ length: 15 }, () => limiter.run('x', async () => undefined, 'srv')));
    // 5 at once, then 10 more at 50/s: at least ~200 ms.
    expect(performance.now() - started).toBeGreaterThanOrEqual(180);
  });
});
