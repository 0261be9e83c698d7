import { chmodSync, chownSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import type { Workspace, WorkspaceFactory } from '../types.js';
import type { Sandbox } from '../../sandbox/types.js';
import { idlePidScript, shellQuote } from '../../sandbox/shell/shell-script.js';
import { PINNED_PIDS, startAtPid } from './process-ids.js';


/**
 * `__ic_kill [pid…]`: kills every process but init, the idle process (by its pid: see
 * idlePidScript), this shell and the given ones, until none is left (a fork bomb keeps forking while it is killed), for
 * up to {@link KILL_SECONDS} s (a killed process is gone only once the kernel has run its exit: on a loaded host that
 * can take longer than many passes of this loop, which a count of passes would give up on). Builtins
 * only: nothing here forks. When the sandbox's process count (its pids cgroup) is 3 plus
 * the given ones, those are all there is: no scan.
 */
const KILL_SECONDS = 3;
const KILL_ALL = `__ic_kill() {
  local keep=" 1 $$ $* " d p r n s c f i i_d i_p i_a i_s ends=$(( \${EPOCHREALTIME/[.,]/} + ${KILL_SECONDS} * 1000000 ))
  for f in /sys/fs/cgroup/pids.current /sys/fs/cgroup/pids/pids.current; do [[ -r $f ]] && break; f=; done
  for ((r = 0; r == 0 || \${EPOCHREALTIME/[.,]/} < ends; r++)); do
    c=; [[ -n $f ]] && builtin read -r c 2>/dev/null < "$f"
    [[ -n $c ]] && (( c <= 3 + $# )) && return 0
    if (( r == 0 )); then
${idlePidScript('i')}
      keep+="$i "
    fi
    n=()
    for d in /proc/[0-9]*; do
      p=\${d#/proc/}
      [[ $keep == *" $p "* ]] && continue
      # A zombie is dead already; init reaps it.
      builtin read -r s 2>/dev/null < "$d/stat" || continue
      s=\${s##*) }
      [[ \${s:0:1} == Z ]] || n+=("$p")
    done
    (( \${#n[@]} )) || return 0
    builtin kill -9 "\${n[@]}" 2>/dev/null
  done
  builtin echo "still running: \${n[*]}"
  return 1
}`;

/**
 * `__ic_settle etc|- [pid…]`: kills every process but ours and the given ones ({@link KILL_ALL}), then puts back what the
 * layer diff does not see, as a new sandbox of the image has it: /dev (a tmpfs: entries a
 * new sandbox lacks are removed, /dev/shm and /dev/mqueue emptied), System V IPC objects
 * (`ipcrm` only when one exists: each process costs) and, with `etc`, the /etc files the
 * engine mounts (without: the host puts them back, see InPlaceRestorer.restoreHostEtc).
 * Prints `clean` when done. Processes that fork: at most one rm, `ipcrm` when an IPC object exists, and with
 * `etc` one `stat` of the mounted /etc files (chmod and chown only when one changed); otherwise builtins.
 * @param dev the entries of /dev in a new sandbox, as `/dev/*` lists them with dotglob.
 * @param etc contents, and `mode uid gid`, of the mounted /etc files in a new sandbox.
 */
function settleDefinition(dev: readonly string[], etc: ReadonlyMap<string, { content: string; owner: string }>): string {
  const devList = shellQuote(` ${dev.join(' ')} `);
  return [
    KILL_ALL,
    '__ic_settle() {',
    '  __ic_kill "${@:2}" || return',
    '  local f n gone=() ipc=0 found',
    '  shopt -s nullglob dotglob',
    '  found=(/dev/*)',
    `  if [[ " \${found[*]} " != ${devList} ]]; then`,
    `    for f in "\${found[@]}"; do case ${devList} in *" $f "*) ;; *) gone+=("$f");; esac; done`,
    '  fi',
    '  gone+=(/dev/shm/* /dev/mqueue/*)',
    '  shopt -u nullglob dotglob',
    '  (( ${#gone[@]} )) && { rm -rf -- "${gone[@]}" || return; }',
    '  for f in /proc/sysvipc/shm /proc/sysvipc/sem /proc/sysvipc/msg; do mapfile -t n 2>/dev/null < "$f"; (( ${#n[@]} > 1 )) && ipc=1; done',
    '  (( ipc )) && ipcrm --all 2>/dev/null',
    ...(etc.size > 0
      ? [
          '  if [[ $1 == etc ]]; then',
          ...[...etc].map(([file, { content }]) => `    builtin printf '%s' ${shellQuote(content)} > ${file}`),
          // Their modes and owners too (one stat for all; chmod and chown only when one changed).
          `    if [[ "$(stat -c '%a %u %g %n' ${[...etc.keys()].join(' ')} 2>&1)" != ${shellQuote([...etc].map(([file, { owner }]) => `${owner} ${file}`).join('\n'))} ]]; then`,
          ...[...etc].map(([file, { owner }]) => {
            const [mode, uid, gid] = owner.split(' ');
            return `      chmod ${mode} ${file}; chown ${uid}:${gid} ${file}`;
          }),
          '    fi',
          '  fi',
        ]
      : []),
    '  builtin echo clean',
    '}',
  ].join('\n');
}

/**
 * What is compared of a mount point or a /dev entry (a `stat` line of InPlaceRestorer.statsOf):
 * its type, mode, owner and device numbers — what an episode's `chmod 600 /dev/null` or
 * `chown 1:1 /dev/shm` changes (the settle script puts back the entries, not their modes).
 * Not their links or sizes: /proc counts a link per process.
 */
function systemFields(line: string | undefined): string {
  const words = line?.split(' ') ?? [];
  const numbers = words.slice(-8);
  return numbers.length === 8 ? [words.slice(0, -8).join(' '), ...numbers.slice(0, 3), ...numbers.slice(6)].join(' ') : '';
}

/**
 * What a restore in place came to: clean, or refused with the first difference from a new
 * sandbox it found (in words: for the pool's caller, a test's failure message, a bug report).
 */
export type RestoreOutcome = { readonly clean: true } | { readonly clean: false; readonly why: string };

const CLEAN: RestoreOutcome = { clean: true };
const refused = (why: string): RestoreOutcome => ({ clean: false, why });

/**
 * Makes a used workspace clean again in place, as a new sandbox of the same image, instead
 * of replacing it (a replacement costs a container creation) — but only
 * where the result is indistinguishable from a new sandbox; otherwise it says so and the
 * caller replaces the sandbox.
 *
 * What it puts back: processes and System V IPC objects (every process but init, the idle
 * process and the control shell is killed, `ipcrm --all` removes IPC objects; the agent's
 * shell is new), /dev (a tmpfs: entries not in a new sandbox are removed, /dev/shm and
 * /dev/mqueue emptied) and the /etc files the engine mounts (/etc/hostname; with network
 * /etc/hosts and /etc/resolv.conf: put back from the host when it can reach the engine's
 * files, else by the sandbox's shell). The agent cannot change the hostname, the clock,
 * mounts or kernel settings (no capability for it).
 *
 * What it does not put back: the root file system. A path an episode wrote there lives in the
 * container's writable layer from then on, and no write from inside can make it the image's
 * again: a folder copied up there counts one link where the image's counts 2 + its
 * subfolders (overlayfs reports 1 for a merged folder), keeps the size and blocks it grew to,
 * gets a new ctime, and — unlike the image's files, which overlayfs reads without touching
 * their atime — has its atime moved by the next read (relatime). So a sandbox whose writable
 * layer holds a path a new sandbox's does not (`SandboxFromHost.changes` without a
 * reference, else `Sandbox.changes`) is not clean, nor is one whose root folder is not a new
 * sandbox's (mode, owner, links, size, blocks: it is in every writable layer, so the listing
 * does not show it changed), nor one whose mount points or /dev entries differ in type, mode,
 * owner or device numbers (outside the layer too): the caller replaces it. Measured and
 * argued in docs/fidelity.md ("Restored ≡ new").
 */
export class InPlaceRestorer {
  private template: Promise<Workspace> | undefined;
  /** {@link settleDefinition} for this image, read from the template. */
  private settle: Promise<{ definition: string; etcFiles: readonly string[]; systemPaths: readonly string[] }> | undefined;
  /**
   * What a new sandbox of the image has in its writable layer (the folders the engine's mount
   * points are in), read once from the template: each path with its type, mode, owner, links,
   * size and blocks (its times are the sandbox's creation time, different in each), and a
   * script that gives them the template's mtimes (so that a comparison with the template, which
   * tells a scorer whether an episode changed anything, finds them equal); and the root
   * folder's own type, mode, owner, links, size and blocks (`root`): it is in every writable
   * layer, so no listing of the layer shows an episode's `chmod 700 /`, or a root folder grown
   * by files made and deleted there.
   */
  private newLayer: Promise<{ stats: Map<string, string>; root: string; system: readonly string[]; systemPaths: readonly string[]; setMtimes: string }> | undefined;

  /**
   * @param keepWarmMs when > 0 (and the factory can), the template is one an earlier process
   *   kept warm if there is one, and is kept warm this long on close (a template is never
   *   handed to an agent: nothing but the harness ever ran in it).
   */
  constructor(
    private readonly factory: WorkspaceFactory,
    private readonly keepWarmMs = 0,
  ) {}

  private templateWorkspace(): Promise<Workspace> {
    this.template ??= (async () => {
      const adopted = this.keepWarmMs > 0 ? await this.factory.adopt?.('template').catch(() => undefined) : undefined;
      const workspace = adopted ?? (await this.factory.create());
      workspace.runner.close();
      return workspace;
    })();
    return this.template;
  }

  /** What a new sandbox of the image looks like where its layers don't tell (mounts, /dev): {@link settleDefinition}, and the /etc files the engine mounts. */
  private settleScript(): Promise<{ definition: string; etcFiles: readonly string[]; systemPaths: readonly string[] }> {
    this.settle ??= (async () => {
      const { control } = await this.templateWorkspace();
      const dev = (await control.run('shopt -s nullglob dotglob; builtin printf "%s\\n" /dev/*; shopt -u nullglob dotglob')).output.split('\n').filter(Boolean);
      const mountPoints = (await control.run('while builtin read -r _ _ _ _ m _; do builtin printf "%s\\n" "$m"; done < /proc/self/mountinfo')).output.split('\n');
      const etc = new Map<string, { content: string; owner: string }>();
      // An /etc file the engine does not mount is the image's, restored with the other files.
      for (const file of ['/etc/hosts', '/etc/hostname', '/etc/resolv.conf'].filter((f) => mountPoints.includes(f))) {
        const read = await control.run(`cat ${file}`);
        const owner = await control.run(`stat -c '%a %u %g' ${file}`);
        if (read.exitCode === 0 && owner.exitCode === 0) etc.set(file, { content: read.output, owner: owner.output.trim() });
      }
      // The mount points and /dev's entries: outside the writable layer, so no listing of it
      // shows an episode's `chmod 600 /dev/null` or `chown 1:1 /dev/shm` (see systemFields).
      const systemPaths = [...new Set([...mountPoints.filter((m) => m.startsWith('/') && m !== '/' && !etc.has(m)), ...dev])].sort();
      return { definition: settleDefinition(dev, etc), etcFiles: [...etc.keys()], systemPaths };
    })();
    // A template killed while it was read: read the next one's.
    this.settle.catch(() => (this.settle = undefined));
    return this.settle;
  }

  /**
   * The mounted /etc files of `sandbox` as host files paired with the template's, when the
   * host can reach every one of both (see SandboxFromHost.fileOf); undefined otherwise (the
   * sandbox's shell then puts them back, one `stat` process per restore).
   */
  private async hostEtcFiles(sandbox: Sandbox, template: Sandbox, files: readonly string[]): Promise<{ file: string; pristine: string }[] | undefined> {
    const [mine, theirs] = [sandbox.fromHost, template.fromHost];
    if (files.length === 0 || !mine || !theirs) return undefined;
    const pairs = await Promise.all(files.map(async (path) => ({ file: await mine.fileOf(path), pristine: await theirs.fileOf(path) })));
    return pairs.every((p): p is { file: string; pristine: string } => p.file !== undefined && p.pristine !== undefined) ? pairs : undefined;
  }

  /** The template's host /etc files as read once: content, mode and owner (nothing but the harness ever touches them). */
  private readonly pristineEtc = new Map<string, { content: Buffer; mode: number; uid: number; gid: number }>();

  private pristineHostFile(path: string): { content: Buffer; mode: number; uid: number; gid: number } {
    let pristine = this.pristineEtc.get(path);
    if (!pristine) {
      const { mode, uid, gid } = statSync(path);
      pristine = { content: readFileSync(path), mode: mode & 0o7777, uid, gid };
      this.pristineEtc.set(path, pristine);
    }
    return pristine;
  }

  /**
   * Makes each host file as its pristine twin (the template's): content, mode and owner, in
   * the host's terms (so a user-namespace mapping changes nothing). One `stat` when nothing
   * changed, and a read of the file only when its size is the pristine one (the agent may
   * have written gigabytes into it); it is rewritten in place (the bind mount keeps its inode).
   */
  private restoreHostEtc(files: readonly { file: string; pristine: string }[]): void {
    for (const { file, pristine } of files) {
      const want = this.pristineHostFile(pristine);
      const have = statSync(file);
      if (have.size !== want.content.length || !readFileSync(file).equals(want.content)) writeFileSync(file, want.content);
      if ((have.mode & 0o7777) !== want.mode) chmodSync(file, want.mode);
      if (have.uid !== want.uid || have.gid !== want.gid) chownSync(file, want.uid, want.gid);
    }
  }

  /** The paths in `sandbox`'s writable layer, sorted (read from outside where it can be). */
  private async layerPaths(sandbox: Sandbox): Promise<string[]> {
    return ((await sandbox.fromHost?.changes()) ?? (await sandbox.changes())).map((c) => c.path).sort();
  }

  /**
   * Each of `paths` with its type, mode, owner, links, size, blocks and device numbers as
   * `workspace` shows them, then `then` run (one round trip through its control shell, one `stat`).
   * @returns undefined when they cannot be read (one of them is gone, say).
   */
  private async statsOf({ control }: Workspace, paths: readonly string[], then = ''): Promise<string[] | undefined> {
    const read = await control.run(`stat -c '%F %a %u %g %h %s %b %t %T' -- ${paths.map(shellQuote).join(' ')}${then ? `; ${then}` : ''}`);
    const lines = read.output.split('\n');
    return read.exitCode === 0 && lines.length === paths.length + 1 ? lines.slice(0, -1) : undefined;
  }

  /** {@link newLayer}, read from the template on first use. */
  private templateLayer(): Promise<{ stats: Map<string, string>; root: string; system: readonly string[]; systemPaths: readonly string[]; setMtimes: string }> {
    this.newLayer ??= (async () => {
      const [template, { systemPaths }] = await Promise.all([this.templateWorkspace(), this.settleScript()]);
      const paths = await this.layerPaths(template.sandbox);
      const [root, ...read] = (await this.statsOf(template, ['/', ...paths, ...systemPaths])) ?? [];
      const stats = read.slice(0, paths.length);
      const system = read.slice(paths.length).map(systemFields);
      const mtimes = paths.length > 0 ? (await template.control.run(`stat -c %Y -- ${paths.map(shellQuote).join(' ')}`)).output.split('\n') : [''];
      if (root === undefined || stats.length !== paths.length || system.length !== systemPaths.length || mtimes.length !== paths.length + 1) throw new Error("the template's writable layer could not be read");
      // One `touch` per distinct time (the engine makes these folders at once: usually one).
      const byMtime = new Map<string, string[]>();
      paths.forEach((path, i) => byMtime.set(mtimes[i]!, [...(byMtime.get(mtimes[i]!) ?? []), shellQuote(path)]));
      const setMtimes = [...byMtime].map(([mtime, quoted]) => `touch -c -h -m -d @${mtime} -- ${quoted.join(' ')}`).join('; ');
      return { stats: new Map(paths.map((path, i) => [path, stats[i]!])), root, system, systemPaths, setMtimes };
    })();
    this.newLayer.catch(() => (this.newLayer = undefined));
    return this.newLayer;
  }

  /**
   * Restores `workspace` (its agent runner is closed and replaced by a new one, except an
   * unused one an adopted workspace brought along: see Workspace.unusedRunnerPid).
   * @returns clean, or why it could not be made so (the caller removes it).
   */
  async restore(workspace: Workspace): Promise<RestoreOutcome> {
    try {
      return await this.restoreInPlace(workspace);
    } catch (error) {
      await this.dropTemplateIfDead();
      throw error;
    }
  }

  /** A template sandbox that died (killed from outside) is replaced on the next restore. */
  private async dropTemplateIfDead(): Promise<void> {
    const current = this.template;
    const template = await current?.catch(() => undefined);
    const alive = template ? await template.control.run(':', { timeoutMs: 5_000 }).then((r) => r.exitCode === 0, () => false) : false;
    if (alive || this.template !== current) return;
    this.template = undefined;
    if (template) await this.factory.destroy(template).catch(() => undefined);
  }

  private async restoreInPlace(workspace: Workspace): Promise<RestoreOutcome> {
    const { sandbox, control } = workspace;
    workspace.fromImage = false;
    // An adopted workspace's handed-over agent shell has run nothing: kept, no new one started.
    const keptRunner = workspace.unusedRunnerPid;
    workspace.unusedRunnerPid = undefined;
    if (!keptRunner) workspace.runner.close();
    // Processes first (nothing may write while files are compared), then /dev, IPC and the
    // mounted /etc files: one round trip, the functions sent once per control shell.
    const settle = await this.settleScript();
    const template = await this.templateWorkspace();
    const hostEtc = await this.hostEtcFiles(sandbox, template.sandbox, settle.etcFiles);
    const settled = await control.run(`__ic_settle ${hostEtc ? '-' : 'etc'}${keptRunner ? ` ${keptRunner}` : ''}`, { definitions: [settle.definition] });
    if (settled.output !== 'clean\n') return refused(`its processes, /dev or IPC objects could not be put back: ${JSON.stringify(settled.output.slice(0, 200))} (exit ${settled.exitCode})`);
    if (hostEtc) this.restoreHostEtc(hostEtc);

    // The root file system: clean only when its writable layer is a new sandbox's (see the class comment).
    // Its paths are compared before anything runs there: a program the episode replaced is one of them.
    const [paths, pristine] = await Promise.all([this.layerPaths(sandbox), this.templateLayer()]);
    const added = paths.filter((path) => !pristine.stats.has(path));
    const gone = [...pristine.stats.keys()].filter((path) => !paths.includes(path));
    if (added.length > 0 || gone.length > 0) return refused(`its writable layer is not a new sandbox's: ${[...added.map((p) => `+${p}`), ...gone.map((p) => `-${p}`)].slice(0, 5).join(' ')}${added.length + gone.length > 5 ? ' …' : ''}`);
    // With the root folder and the system paths, which no listing of the layer shows changed.
    const read = await this.statsOf(workspace, ['/', ...paths, ...pristine.systemPaths], pristine.setMtimes);
    if (!read) return refused('its root folder, layer paths or system paths could not be read');
    const [root, ...stats] = read;
    if (root !== pristine.root) return refused(`its root folder is "${root}", a new sandbox's "${pristine.root}"`);
    const changed = paths.findIndex((path, i) => pristine.stats.get(path) !== stats[i]);
    if (changed >= 0) return refused(`${paths[changed]} is "${stats[changed]}", a new sandbox's "${pristine.stats.get(paths[changed]!)}"`);
    const system = pristine.system.findIndex((want, i) => systemFields(stats[paths.length + i]) !== want);
    if (system >= 0) return refused(`${pristine.systemPaths[system]} is "${systemFields(stats[paths.length + system])}", a new sandbox's "${pristine.system[system]}"`);
    // Process ids as a new sandbox's (PINNED_PIDS): the agent's runner's, the episode's first
    // process's (its control shell's was pinned when the sandbox was made).
    if (!keptRunner) workspace.runner = await startAtPid(sandbox, PINNED_PIDS.agent, () => this.factory.openRunner(sandbox));
    await sandbox.fromHost?.setNextPid(PINNED_PIDS.episode);
    workspace.reference = template.sandbox;
    return CLEAN;
  }

  /** Removes the template sandbox, or keeps it warm (see the constructor). */
  async close(): Promise<void> {
    const template = await this.template?.catch(() => undefined);
    if (!template) return;
    const kept = this.keepWarmMs > 0 && this.factory.park ? await this.factory.park(template, 'template', this.keepWarmMs).catch(() => false) : false;
    if (!kept) await this.factory.destroy(template);
  }
}
