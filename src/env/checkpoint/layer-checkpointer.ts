import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { CheckpointError } from '../../errors.js';
import type { HeldWorkspace, Workspace, WorkspaceSource } from '../../pool/types.js';
import { CONTROL_SHELL } from '../../pool/workspace-factory.js';
import { CarryRefusal } from '../../sandbox/carry-refusal.js';
import { readOutsideLayer, requireSameOutsideLayer } from '../../sandbox/outside-layer.js';
import { ShellSession } from '../../sandbox/shell/shell-session.js';
import { idlePidScript } from '../../sandbox/shell/shell-script.js';
import { captureShellState, restoreShellState, type ShellState } from '../../sandbox/shell/shell-state.js';
import type { CommandRunner } from '../../sandbox/shell/types.js';
import type { LayerArchive, SandboxSpec } from '../../sandbox/types.js';
import type { EpisodeSnapshot } from '../episode-ledger.js';
import type { Checkpointer, SavedPart } from './episode-checkpoints.js';
import { refusedCheckpoint } from './refusals.js';
import { SHELL_VALUES_NOT_CARRIED, type SandboxCheckpointHost } from './sandbox-states.js';

/** What a {@link LayerCheckpointer} keeps of an episode (see SandboxEpisodeState). */
export interface LayerPart {
  readonly spec: SandboxSpec;
  readonly layer: LayerArchive;
  readonly shell: ShellState;
  readonly outside: string;
}

/**
 * What a new sandbox shows outside its layer (src/sandbox/outside-layer.ts), by runtime and
 * spec, as the first child restored from a checkpoint read it (a child is a new sandbox, or
 * a pool's spare restored as one): later restores compare the checkpoint's with it and read
 * no child's. Shared by every env of the process (a fork's children are new envs).
 */
const newSandboxOutside = new Map<string, string>();

/**
 * A sandbox episode carried by copy: the sandbox's written files (archived on the host, the
 * sandbox frozen meanwhile unless nothing of the episode's runs) and the agent shell's state.
 * A restore lays them over a warm workspace in place where one is ready, else makes a new
 * sandbox from the layer; the shell's state is read back and compared (equal, or refused).
 * Processes the episode left running are not carried: the handle's `info.dropped` lists them.
 */
export class LayerCheckpointer implements Checkpointer<HeldWorkspace, LayerPart> {
  constructor(private readonly host: SandboxCheckpointHost) {}

  async save({ workspace }: HeldWorkspace, _episode: EpisodeSnapshot, dir: string): Promise<SavedPart<LayerPart>> {
    const { runtime, limits, envId } = this.host;
    const { sandbox, runner, control } = workspace;
    if (!sandbox.writtenLayer || !runtime.createFromLayer) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `the ${runtime.name} runtime cannot copy a sandbox's written files`);
    if (!(runner instanceof ShellSession)) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `${envId}'s runner is not a bash session: its state cannot be checkpointed`);
    try {
      // Before the capture, whose subshell is a process of the sandbox while it runs.
      const [left, outside] = await Promise.all([leftRunning(control, runner.pid), readOutsideLayer(control)]);
      mkdirSync(dir, { recursive: true });
      // The shell's state is read while the layer is archived. With no process of the episode's
      // left (not even one without a command line), nothing writes meanwhile (the capture's
      // subshell runs builtins and writes nothing): the sandbox is not frozen. Otherwise it is,
      // and the capture waits for the thaw.
      const [captured, archived] = await Promise.allSettled([captureShellState(runner), sandbox.writtenLayer.archive(join(dir, 'layer.tar'), limits, left.any)]);
      if (captured.status === 'rejected') throw captured.reason;
      if (archived.status === 'rejected') throw archived.reason;
      const [shell, layer] = [captured.value, archived.value];
      return {
        part: { spec: sandbox.spec, layer, shell, outside },
        info: { layer: { paths: layer.paths, bytes: layer.bytes, archiveBytes: layer.archiveBytes }, dropped: { processes: left.commands, shellValues: SHELL_VALUES_NOT_CARRIED } },
      };
    } catch (error) {
      if (error instanceof CarryRefusal) throw refusedCheckpoint(error);
      throw error;
    }
  }

  /**
   * A workspace whose files and agent shell are the checkpoint's: a warm one laid over in
   * place, or a new sandbox from the layer (no source's). What lies outside the layer is not
   * carried: refused unless the parent's is a new sandbox's.
   * @throws CheckpointError CHECKPOINT_UNSUPPORTED where the runtime cannot make a sandbox
   *   from a layer; CHECKPOINT_REFUSED when the shell's state could not be given exactly.
   */
  async load(state: LayerPart & EpisodeSnapshot): Promise<HeldWorkspace> {
    const { runtime, image } = this.host;
    if (!runtime.createFromLayer) throw new CheckpointError('CHECKPOINT_UNSUPPORTED', `the ${runtime.name} runtime cannot make a sandbox from a checkpoint`);
    const { spec, outside, task } = state;
    this.host.requireRestorable(spec, task);
    const outsideKey = `${runtime.name} ${JSON.stringify(spec)}`;
    const known = newSandboxOutside.get(outsideKey);
    if (known !== undefined) {
      try {
        requireSameOutsideLayer(outside, known);
      } catch (error) {
        throw refusedCheckpoint(error as CarryRefusal);
      }
    }
    const checkOutside = known !== undefined ? undefined : async (control: CommandRunner) => {
      const child = await readOutsideLayer(control);
      newSandboxOutside.set(outsideKey, child);
      requireSameOutsideLayer(outside, child);
    };
    const source = this.host.spares();
    const inPlace = spec.image === image ? await this.laidOver(source, state, checkOutside) : undefined;
    if (inPlace) return { workspace: inPlace, returnTo: source };
    return { workspace: await this.fromLayer(state, checkOutside), returnTo: null };
  }

  /**
   * The checkpoint's files and shell in a warm workspace `source` has ready now (a pool's
   * idle one: see WorkspaceSource.acquireIfIdle), laid over it in place (WrittenLayer.apply):
   * no new sandbox. Undefined where there is none ready, or it cannot be done in place (the
   * workspace then goes back to its source, which replaces it if it was written).
   */
  private async laidOver(source: WorkspaceSource, { layer, shell }: LayerPart, checkOutside?: (control: CommandRunner) => Promise<void>): Promise<Workspace | undefined> {
    const workspace = await source.acquireIfIdle?.();
    if (!workspace) return undefined;
    const { sandbox, runner } = workspace;
    if (!(runner instanceof ShellSession) || !sandbox.writtenLayer) {
      source.release(workspace);
      return undefined;
    }
    // The shell's state (but for its working directory) is replayed while the files are laid:
    // two shells of the sandbox, the agent's and ours. The workspace goes back dirty if either fails: its source restores or replaces it.
    const laid = sandbox.writtenLayer.apply(layer).then((done) => {
      if (!done) throw new Error('the layer cannot be laid in place');
    });
    try {
      // What lies outside the layer is read meanwhile (when it must be), through the harness's shell.
      await Promise.all([restoreShellState(runner, shell, laid), checkOutside?.(workspace.control)]);
      return workspace;
    } catch (error) {
      await laid.catch(() => undefined);
      source.release(workspace);
      if (error instanceof CarryRefusal) throw refusedCheckpoint(error);
      return undefined;
    }
  }

  private async fromLayer({ spec, layer, shell }: LayerPart, checkOutside?: (control: CommandRunner) => Promise<void>): Promise<Workspace> {
    const sandbox = await this.host.runtime.createFromLayer!(spec, layer);
    let control: ShellSession | undefined;
    let runner: CommandRunner | undefined;
    try {
      control = await ShellSession.open(sandbox, CONTROL_SHELL);
      sandbox.launchThrough?.(control);
      runner = await this.host.openRunner(sandbox);
      await Promise.all([restoreShellState(runner, shell), checkOutside?.(control)]);
      // Every path of its layer is the episode's (as in the parent, made from the image).
      return { sandbox, control, runner, fromImage: true };
    } catch (error) {
      runner?.close();
      control?.close();
      await sandbox.destroy().catch(() => undefined);
      if (error instanceof CarryRefusal) throw refusedCheckpoint(error);
      throw error;
    }
  }
}

/**
 * The processes in the sandbox that are not the harness's (init, the idle process by its
 * pid, the control shell and the agent's shell `runnerPid`): what the episode left running.
 * `commands`: the command lines of those that have one; `any`: whether there is any such
 * process at all, one without a command line (a zombie, or one that cleared its arguments)
 * included. Read by the control shell with builtins.
 */
async function leftRunning(control: ShellSession, runnerPid: number): Promise<{ commands: string[]; any: boolean }> {
  const read = await control.run(
    `${idlePidScript('__i')}\nfor __d in /proc/[0-9]*; do __p=\${__d#/proc/}; [[ " 1 $$ $__i ${runnerPid} " == *" $__p "* ]] && continue; __a=; IFS= builtin read -r -d '' __a 2>/dev/null < "$__d/cmdline"; builtin printf '+%s\n' "$__a"; done; builtin unset -v __i __i_d __i_p __i_a __i_s __d __p __a`,
  );
  const lines = read.output.split('\n').filter(Boolean);
  return { commands: lines.map((line) => line.slice(1)).filter(Boolean), any: lines.length > 0 };
}
