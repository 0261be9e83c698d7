/** The output formats of rollouts, one episode per line each. */

import { ConfigError, TrajectoryError } from '../errors.js';
import { toAtif } from './atif.js';
import { toHfMessages } from './hf-messages.js';
import { FLOAT_KEYS, jsonLine, readJsonLines } from './json-line.js';
import { ROLLOUT_FORMAT, type RolloutRecord } from './record.js';

/** `jsonl`: our rollout records; `hf-messages`: Hugging Face conversational lines; `atif`: one ATIF v1.4 trajectory per line. */
export type RolloutFormat = 'jsonl' | 'hf-messages' | 'atif';
export const ROLLOUT_FORMATS: readonly RolloutFormat[] = ['jsonl', 'hf-messages', 'atif'];

/** @throws ConfigError naming `flag` when `value` is not a format. */
export function parseRolloutFormat(value: string, flag = '--format'): RolloutFormat {
  if (!(ROLLOUT_FORMATS as readonly string[]).includes(value)) throw new ConfigError(flag, `must be one of ${ROLLOUT_FORMATS.join(', ')}, got "${value}"`);
  return value as RolloutFormat;
}

/** One line (without its newline) of `record` in `format`; `version` is intercode-ts's (ATIF's agent.version). */
export function formatRecord(record: RolloutRecord, format: RolloutFormat, version: string): string {
  const value = format === 'jsonl' ? record : format === 'hf-messages' ? toHfMessages(record) : toAtif(record, version);
  return jsonLine(value, FLOAT_KEYS);
}

/** The parts of a record the conversions walk, checked before any is converted. */
const RECORD_SHAPE: readonly [string, 'list' | 'object'][] = [
  ['messages', 'list'],
  ['tools', 'list'],
  ['actions', 'list'],
  ['observations', 'list'],
  ['rewards', 'list'],
  ['valid_action', 'list'],
  ['executed', 'list'],
  ['turn_messages', 'list'],
  ['sample', 'object'],
  ['usage', 'object'],
  ['tokens', 'object'],
  ['tokens.turns', 'list'],
];

/** Reads the rollout records of a `collect --format jsonl` file. @throws TrajectoryError naming file and line. */
export function readRolloutRecords(file: string): RolloutRecord[] {
  const records = readJsonLines(file).map(({ value, line }) => {
    if ((value as { format?: unknown })?.format !== ROLLOUT_FORMAT) {
      throw new TrajectoryError({ file, line, field: 'format' }, `must be "${ROLLOUT_FORMAT}" (a line of \`collect --policy llm:… --format jsonl\`); hf-messages and ATIF lines convert only to --format intercode`);
    }
    const record = value as Record<string, unknown>;
    for (const [field, kind] of RECORD_SHAPE) {
      const [head, tail] = field.split('.') as [string, string | undefined];
      const at = tail === undefined ? record[head] : (record[head] as Record<string, unknown> | undefined)?.[tail];
      if (kind === 'list' ? !Array.isArray(at) : at === null || typeof at !== 'object' || Array.isArray(at)) {
        throw new TrajectoryError({ file, line, field }, `must be ${kind === 'list' ? 'a list' : 'an object'} (the line is not a whole rollout record)`);
      }
    }
    return value as RolloutRecord;
  });
  if (records.length === 0) throw new TrajectoryError({ file }, 'holds no rollout records');
  return records;
}
