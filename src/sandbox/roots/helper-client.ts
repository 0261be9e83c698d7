import { connect, type Socket } from 'node:net';

/** The helper refused a request (its message says why). */
export class HelperRefusal extends Error {}

/**
 * The harness's side of the episode-root helper's socket (see native/episode-root.c):
 * requests numbered and answered in any order, frames of NUL-separated fields behind a
 * 4-byte length, and the exits the helper reports.
 */
export class HelperClient {
  private nextSeq = 1;
  private readonly waiting = new Map<string, { resolve(value: string): void; reject(error: Error): void }>();
  private readonly exits = new Map<number, { resolve(code: number): void; reject(error: Error): void }>();
  private readonly exited = new Map<number, number>();
  private buffer: Buffer = Buffer.alloc(0);
  private closedWith: Error | undefined;

  private constructor(private readonly socket: Socket) {
    // Holds the process open only while a request or an exit waits for its answer (an idle
    // pool goes with the process; a script awaiting a process's end does not).
    socket.unref();
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    const close = (error?: Error) => {
      this.closedWith ??= error ?? new Error('the episode-root helper closed its socket');
      for (const { reject } of [...this.waiting.values(), ...this.exits.values()]) reject(this.closedWith);
      this.waiting.clear();
      this.exits.clear();
    };
    socket.on('error', close);
    socket.on('close', () => close());
  }

  /** Connects to the helper at `path`, trying until `timeoutMs` passed (it may still be starting). */
  static async connect(path: string, timeoutMs: number): Promise<HelperClient> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const socket = await new Promise<Socket>((resolve, reject) => {
          const s = connect(path, () => resolve(s));
          s.once('error', reject);
        });
        socket.removeAllListeners('error');
        return new HelperClient(socket);
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }


  get alive(): boolean {
    return this.closedWith === undefined;
  }

  request(op: string, ...fields: readonly string[]): Promise<string> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    const seq = String(this.nextSeq++);
    const parts = [op, seq, ...fields].map((f) => {
      if (f.includes('\0')) throw new RangeError('a helper request field holds a NUL');
      return Buffer.from(`${f}\0`);
    });
    const body = Buffer.concat(parts);
    const head = Buffer.alloc(4);
    head.writeUInt32LE(body.length);
    return new Promise<string>((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject });
      this.holdProcess();
      this.socket.write(Buffer.concat([head, body]));
    });
  }

  /**
   * Resolves with the exit code of process `pid`, one started with the `x` flag; rejects when
   * the helper goes before reporting it.
   */
  exitOf(pid: number): Promise<number> {
    const code = this.exited.get(pid);
    if (code !== undefined) {
      this.exited.delete(pid);
      return Promise.resolve(code);
    }
    if (this.closedWith) return Promise.reject(this.closedWith);
    return new Promise((resolve, reject) => {
      this.exits.set(pid, { resolve, reject });
      this.holdProcess();
    });
  }

  /** The socket keeps this process alive exactly while something waits on it. */
  private holdProcess(): void {
    if (this.waiting.size + this.exits.size > 0) this.socket.ref();
    else this.socket.unref();
  }

  private receive(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    while (this.buffer.length >= 4) {
      const length = this.buffer.readUInt32LE(0);
      if (this.buffer.length < 4 + length) return;
      const fields = this.buffer.subarray(4, 4 + length).toString('utf8').split('\0');
      fields.pop();
      this.buffer = this.buffer.subarray(4 + length);
      this.dispatch(fields);
    }
  }

  private dispatch(fields: string[]): void {
    if (fields[0] === 'X') {
      const pid = Number(fields[1]);
      const code = Number(fields[2]);
      const waiter = this.exits.get(pid);
      if (waiter) {
        this.exits.delete(pid);
        this.holdProcess();
        waiter.resolve(code);
      } else this.exited.set(pid, code);
      return;
    }
    const [, seq = '', status, value = ''] = fields;
    const waiter = this.waiting.get(seq);
    if (!waiter) return;
    this.waiting.delete(seq);
    this.holdProcess();
    if (status === 'ok') waiter.resolve(value);
    else waiter.reject(new HelperRefusal(value));
  }

  close(): void {
    this.socket.destroy();
  }
}
