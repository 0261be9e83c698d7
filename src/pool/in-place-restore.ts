import { Readable } from 'node:stream';
import { extract as tarExtract, pack as tarPack, type Header } from 'tar-stream';
import { chmodSync, chownSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Workspace, WorkspaceFactory } from './types.js';
import type { Sandbox } from '../sandbox/types.js';
import { shellQuote } from '../sandbox/shell/shell-script.js';


/**
 * `__ic_kill [pid…]`: kills every process but init, the idle process, this shell and the
 * given ones, until none is left (a fork bomb keeps forking while it is killed). Builtins
 * only: nothing here forks. When the sandbox's process count (its pids cgroup) is 3 plus
 * the given ones, those are all there is: no scan.
 */
const KILL_ALL = `__ic_kill() {
  local keep=" 1 $$ $* " d p a r n s c f
  for f in /sys/fs/cgroup/pids.current /sys/fs/cgroup/pids/pids.current; do [[ -r $f ]] && break; f=; done
  for ((r = 0; r < 500; r++)); do
    c=; [[ -n $f ]] && builtin read -r c 2>/dev/null < "$f"
    [[ -n $c ]] && (( c <= 3 + $# )) && return 0
    if (( r == 0 )); then
      for d in /proc/[0-9]*; do builtin read -r -d '' a 2>/dev/null < "$d/cmdline"; [[ $a == intercode-idle ]] && keep+="\${d#/proc/} "; done
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

/** One tar entry, kept to be written back. */
interface Entry {
  header: Header;
  content: Buffer;
}

/**
 * Restores a used workspace in place to the state of a new sandbox from the same image,
 * instead of replacing it (a replacement costs a container creation, ~0.1–0.3 s of CPU).
 *
 * Why it is complete: every write an agent can make lands in one of
 * - the container's own file-system layer, whose every changed path the engine lists
 *   (`Sandbox.changes()`, the overlay's upper directory): added paths are removed, changed
 *   and deleted ones are written back from a pristine sandbox of the same image (content,
 *   type, mode, owner, mtime — directories included);
 * - the few mounts a container has: /dev (tmpfs: entries not in a new sandbox are removed,
 *   /dev/shm and /dev/mqueue emptied), those of /etc/hosts, /etc/hostname and
 *   /etc/resolv.conf the engine mounts (without network, only /etc/hostname: put back from
 *   the host when it can reach the engine's files, else by the sandbox's shell), and the harness's channel directory (read-only in the
 *   sandbox: nothing there to undo);
 * - processes and System V IPC objects: every process but init, the idle process and the
 *   control shell is killed, `ipcrm --all` removes IPC objects; the agent's shell is new.
 * The agent cannot change the hostname, the clock, mounts or kernel settings (no
 * capability for it). What is not restored: inode numbers, atimes and ctimes.
 */
export class InPlaceRestorer {
  private template: Promise<Workspace> | undefined;
  /** {@link settleDefinition} for this image, read from the template. */
  private settle: Promise<{ definition: string; etcFiles: readonly string[] }> | undefined;
  /** Pristine tar entries per path, and per deleted path its whole subtree. */
  private readonly pristine = new Map<string, Entry[]>();

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
  private settleScript(): Promise<{ definition: string; etcFiles: readonly string[] }> {
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
      return { definition: settleDefinition(dev, etc), etcFiles: [...etc.keys()] };
    })();
    // A template killed while it was read: read the next one's.
    this.settle.catch(() => (this.settle = undefined));
    return this.settle;
  }

  /**
   * The mounted /etc files of `sandbox` as host files paired with the template's, when the
   * host can reach every one of both (see Sandbox.hostFileOf); undefined otherwise (the
   * sandbox's shell then puts them back, one `stat` process per restore).
   */
  private async hostEtcFiles(sandbox: Sandbox, template: Sandbox, files: readonly string[]): Promise<{ file: string; pristine: string }[] | undefined> {
    if (files.length === 0 || !sandbox.hostFileOf || !template.hostFileOf) return undefined;
    const pairs = await Promise.all(files.map(async (path) => ({ file: await sandbox.hostFileOf!(path), pristine: await template.hostFileOf!(path) })));
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

  /** Pristine entries for `paths` (recursive: whole subtrees), fetched once from the template. */
  private async entries(paths: readonly string[], recursive: boolean): Promise<Entry[]> {
    const key = (path: string) => `${recursive ? 'R' : 'F'}${path}`;
    const missing = paths.filter((p) => !this.pristine.has(key(p)));
    if (missing.length > 0) {
      const found = await readTar(await this.templateArchive(missing, recursive));
      for (const path of missing) {
        const rel = path.slice(1);
        this.pristine.set(
          key(path),
          found.filter((e) => {
            const name = e.header.name.replace(/\/$/, '');
            return name === rel || (recursive && name.startsWith(`${rel}/`));
          }),
        );
      }
    }
    return paths.flatMap((p) => this.pristine.get(key(p)) ?? []);
  }

  /**
   * A tar archive of `paths` (absolute) in the template, those the image lacks left out.
   * Through the template's control shell, base64-encoded (a fork of tar and base64: an
   * engine exec costs ~45 ms of the machine's CPU, measured); through the engine when that
   * fails or the archive is too large for the shell's output.
   * @throws when the archive cannot be read whole (the template was killed, say): then nothing is cached.
   */
  private async templateArchive(paths: readonly string[], recursive: boolean): Promise<Buffer> {
    const { sandbox, control } = await this.templateWorkspace();
    const relative = paths.map((p) => p.slice(1));
    const select = (args: string) => `cd / && f=(); for p in ${args}; do [[ -e $p || -L $p ]] && f+=("$p"); done; (( \${#f[@]} )) || exit 0`;
    const tar = `tar ${recursive ? '' : '--no-recursion '}-cf - -- "\${f[@]}"`;
    const listed = await control.run(`( ${select(relative.map(shellQuote).join(' '))}; set -o pipefail; ${tar} | base64 -w0 )`).catch(() => undefined);
    if (listed?.exitCode === 0 && listed.events.length === 0) return Buffer.from(listed.output, 'base64');
    const archive = await sandbox.exec(['bash', '-c', `${select('"$@"')}; exec ${tar}`, 'bash', ...relative]);
    if (archive.exitCode !== 0) throw new Error(`reading pristine files from the template failed (exit code ${archive.exitCode})`);
    return archive.output;
  }

  /**
   * Restores `workspace` (its agent runner is closed and replaced by a new one, except an
   * unused one an adopted workspace brought along: see Workspace.unusedRunnerPid).
   * @returns true when it is clean; false when it could not be made so (the caller removes it).
   */
  async restore(workspace: Workspace): Promise<boolean> {
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

  private async restoreInPlace(workspace: Workspace): Promise<boolean> {
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
    if (settled.output !== 'clean\n') return false;
    if (hostEtc) this.restoreHostEtc(hostEtc);

    const changes = await sandbox.changes(template.sandbox);
    const outermostAdded = outermost(changes.filter((c) => c.kind === 'added').map((c) => c.path));
    const deleted = changes.filter((c) => c.kind === 'deleted').map((c) => c.path);
    const modified = changes.filter((c) => c.kind === 'modified').map((c) => c.path);

    if (outermostAdded.length > 0 && (await control.run(`rm -rf -- ${outermostAdded.map(shellQuote).join(' ')}`)).exitCode !== 0) return false;

    const written = [...modified, ...deleted];
    // Unpacking a path rewrites its directory, whose mtime the image gave it: the directory
    // goes into the archive too, before it (GNU tar sets a directory's mtime once it has
    // unpacked what is inside). Not `/`, whose mtime the engine sets per sandbox.
    const parents = [...new Set(written.map((p) => dirname(p)))].filter((p) => p !== '/');
    const entries = written.length > 0 ? [...(await this.entries(parents, false)), ...(await this.entries(modified, false)), ...(await this.entries(deleted, true))] : [];
    if (entries.length > 0) await sandbox.putArchive(await writeTar(entries), '/');
    // A path the engine calls modified that the image does not have (hidden by a later layer): remove it.
    const strays = modified.filter((p) => (this.pristine.get(`F${p}`) ?? []).length === 0);
    if (strays.length > 0 && (await control.run(`rm -rf -- ${strays.map(shellQuote).join(' ')}`)).exitCode !== 0) return false;
    // The removals and the unpacking ran the sandbox's own rm and tar, which the episode may
    // have replaced (a `tar` that exits 0, an /etc/ld.so.preload): where the layers can be
    // read from outside, the result is checked there, and a sandbox not exactly clean is not reused.
    if (changes.length > 0 && !(await this.cleanSeenFromOutside(sandbox, template.sandbox))) return false;
    if (!keptRunner) workspace.runner = await this.factory.openRunner(sandbox);
    workspace.reference = template.sandbox;
    return true;
  }

  /** Whether nothing differs from `template`, read from outside; true when that cannot be read (nothing to check with). */
  private async cleanSeenFromOutside(sandbox: Sandbox, template: Sandbox): Promise<boolean> {
    const left = await sandbox.changesSeenFromOutside?.(template);
    return left === undefined || left.length === 0;
  }

  /** Removes the template sandbox, or keeps it warm (see the constructor). */
  async close(): Promise<void> {
    const template = await this.template?.catch(() => undefined);
    if (!template) return;
    const kept = this.keepWarmMs > 0 && this.factory.park ? await this.factory.park(template, 'template', this.keepWarmMs).catch(() => false) : false;
    if (!kept) await this.factory.destroy(template);
  }
}

/**
 * `items` sorted by their paths component-wise ("a/b" before "a-b"), so a directory's
 * subtree is contiguous and follows the directory.
 */
function byComponents<T>(items: Iterable<T>, pathOf: (item: T) => string): T[] {
  const keyed = [...items].map((item) => ({ key: pathOf(item).replaceAll('/', '\u0000'), item }));
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return keyed.map(({ item }) => item);
}

/** The paths not inside another of `paths` (n log n: an episode may add a hundred thousand files). */
function outermost(paths: readonly string[]): string[] {
  const kept: string[] = [];
  for (const path of byComponents(paths, (p) => p)) {
    const last = kept.at(-1);
    if (last === undefined || !path.startsWith(`${last}/`)) kept.push(path);
  }
  return kept;
}

async function readTar(archive: Buffer): Promise<Entry[]> {
  const entries: Entry[] = [];
  const extract = tarExtract();
  extract.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: unknown) => void chunks.push(chunk as Buffer));
    stream.on('end', () => {
      entries.push({ header, content: Buffer.concat(chunks) });
      next();
    });
  });
  await new Promise<void>((resolve, reject) => {
    extract.on('finish', resolve);
    extract.on('error', reject);
    Readable.from([archive]).pipe(extract);
  });
  return entries;
}

/**
 * An archive of `entries`, each path once, in path order: every directory is directly
 * followed by what is restored inside it, so an extractor that sets a directory's mtime
 * when it leaves the directory (GNU tar) leaves it as the archive says.
 */
async function writeTar(entries: readonly Entry[]): Promise<Buffer> {
  const byName = new Map(entries.map((entry) => [entry.header.name.replace(/\/$/, ''), entry]));
  const ordered = byComponents(byName, ([name]) => name).map(([, entry]) => entry);
  const pack = tarPack();
  const chunks: Buffer[] = [];
  pack.on('data', (chunk: unknown) => void chunks.push(chunk as Buffer));
  const done = new Promise<void>((resolve, reject) => {
    pack.on('end', resolve);
    pack.on('error', reject);
  });
  for (const { header, content } of ordered) {
    await new Promise<void>((resolve, reject) => pack.entry(header, header.type === 'file' ? content : Buffer.alloc(0), (error) => (error ? reject(error) : resolve())));
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

