import cliProgress from 'cli-progress';

/** A progress bar on stderr when it is a terminal, else one line per 10 %. */
export class Progress {
  private readonly bar: cliProgress.SingleBar | undefined;
  private lastDecile = -1;

  constructor(private readonly label: string, private readonly total: number) {
    if (process.stderr.isTTY) {
      this.bar = new cliProgress.SingleBar(
        { format: `${label} [{bar}] {value}/{total} {percentage}% | ETA {eta_formatted} | {status}`, stream: process.stderr, hideCursor: true },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(total, 0, { status: '' });
    }
  }

  update(done: number, status = ''): void {
    if (this.bar) return this.bar.update(done, { status });
    const decile = Math.floor((done / Math.max(1, this.total)) * 10);
    if (decile !== this.lastDecile) {
      this.lastDecile = decile;
      process.stderr.write(`${this.label}: ${done}/${this.total} ${status}\n`);
    }
  }

  stop(): void {
    this.bar?.stop();
  }
}
