import { Command } from 'commander';
import { IntercodeError } from '../errors.js';
import { registerCleanupCommand } from './cleanup-command.js';
import { registerEvalCommand } from './eval-command.js';
import { registerImagesCommand } from './images-command.js';
import { registerMockLlmCommand } from './mock-llm-command.js';
import { registerPlayCommand } from './play-command.js';
import { registerReplayCommand } from './replay-command.js';
import { registerRunCommand } from './run-command.js';

const program = new Command()
  .name('intercode')
  .description('Interactive coding as RL environments: code is the action, execution output the observation, every episode in a Docker sandbox.')
  .showHelpAfterError();
registerRunCommand(program);
registerPlayCommand(program);
registerReplayCommand(program);
registerEvalCommand(program);
registerMockLlmCommand(program);
registerImagesCommand(program);
registerCleanupCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof IntercodeError) {
    process.stderr.write(`intercode: ${error.message}\n`);
    process.exit(error.code === 'CONFIG_INVALID' ? 2 : 1);
  }
  throw error;
}
