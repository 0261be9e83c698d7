import type Docker from 'dockerode';
import { IntercodeError } from '../src/errors.js';
import { connectEngine } from '../src/sandbox/docker/engine.js';
import { installShutdownHandlers } from '../src/sandbox/lifecycle/shutdown.js';
import { describeError } from './sandbox-set.js';
import type { Bench, BenchIO } from './types.js';

/** What a bench that runs envs on the Docker engine supplies; {@link engineBench} does the rest. */
export interface EngineBenchSpec<O extends { json: boolean }, R> {
  name: string;
  summary: string;
  usage: string;
  /** @throws ConfigError naming a bad option. */
  parse(args: readonly string[]): O | 'help';
  measure(docker: Docker, options: O, log: (line: string) => void): Promise<R>;
  /** The human report. */
  format(result: R): string;
  /** Whether the result itself is a failure (exit code 1). Default: never. */
  failed?(result: R): boolean;
}

/**
 * A bench around `spec`: parses (exit 2 on a bad option, with a pointer to --help), connects
 * to the engine, makes Ctrl-C/SIGTERM remove every sandbox, measures, and prints the
 * report — or with `--json` one JSON object — on stdout; progress and errors go to stderr.
 */
export function engineBench<O extends { json: boolean }, R>(spec: EngineBenchSpec<O, R>): Bench {
  return {
    name: spec.name,
    summary: spec.summary,
    async run(args: readonly string[], io: BenchIO): Promise<number> {
      const log = (line: string) => void io.stderr.write(`${spec.name}: ${line}\n`);
      let options: O | 'help';
      try {
        options = spec.parse(args);
      } catch (error) {
        io.stderr.write(`bench ${spec.name}: ${(error as Error).message}\nRun \`npm run bench -- ${spec.name} --help\` for the options.\n`);
        return 2;
      }
      if (options === 'help') {
        io.stdout.write(spec.usage);
        return 0;
      }
      const uninstall = installShutdownHandlers({ log });
      try {
        const result = await spec.measure(await connectEngine(), options, log);
        io.stdout.write(options.json ? `${JSON.stringify(result)}\n` : spec.format(result));
        return spec.failed?.(result) ? 1 : 0;
      } catch (error) {
        const code = error instanceof IntercodeError ? ` [${error.code}]` : '';
        io.stderr.write(`bench ${spec.name}: ${describeError(error)}${code}\n`);
        return 1;
      } finally {
        uninstall();
      }
    },
  };
}
