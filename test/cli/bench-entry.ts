// Runs the bench CLI from source, as bin/bench.js runs it from dist/ (test/cli/bad-input.test.ts).
import { runBenchCli } from '../../bench/index.js';

process.exitCode = await runBenchCli(process.argv.slice(2));
