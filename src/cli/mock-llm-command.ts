import type { Command } from 'commander';
import { ConfigError } from '../errors.js';
import { RecordedModel, startMockServer } from '../mock-llm/index.js';
import { recordedEnvFence } from '../../envs/index.js';

interface MockLlmFlags {
  replay: string;
  port: string;
}

/** `intercode mock-llm --replay FILE --port P`: serves a recorded run as an OpenAI-compatible model on 127.0.0.1. */
export function registerMockLlmCommand(program: Command): void {
  program
    .command('mock-llm')
    .description(
      'serve a recorded InterCode run as an OpenAI-compatible chat endpoint on 127.0.0.1: each episode (found by its ' +
        'query in the messages) is answered with its recorded actions in order — as execute/submit function calls when the ' +
        'request offers an `execute` tool, and with SYNTHETIC deterministic token ids (return_token_ids) and logprobs ' +
        '(logprobs: true) when asked; prints {"baseUrl","episodes","style"} on stdout',
    )
    .requiredOption('--replay <file>', 'a recorded InterCode evaluation file (JSON keyed by task index)')
    .option('--port <port>', 'port on 127.0.0.1 (0: any free port)', '0')
    .action(async (flags: MockLlmFlags) => {
      const port = Number(flags.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError('--port', `must be an integer 0–65535, got "${flags.port}"`);
      const model = await RecordedModel.load(flags.replay, recordedEnvFence);
      const server = await startMockServer(model, port);
      process.stdout.write(`${JSON.stringify({ baseUrl: server.baseUrl, episodes: model.episodes, style: model.style })}\n`);
      process.stderr.write(`mock-llm: ${model.episodes} recorded episodes (${model.style} replies) at ${server.baseUrl}; Ctrl-C stops\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.close();
      const { requests, beyondRecording, unmatched } = server.stats;
      process.stderr.write(`mock-llm: served ${requests} requests (${beyondRecording} past the end of their recording, ${unmatched} unmatched)\n`);
    });
}
