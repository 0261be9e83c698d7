import { OutsideLayerRefusal } from './carry-refusal.js';
import type { CommandRunner } from './shell/types.js';

/**
 * What an episode can change in a sandbox outside its writable layer, which a checkpoint's
 * layer archive therefore does not carry: the entries of /dev and the mount points with
 * their type, mode, owner and device numbers (`chmod 600 /dev/null`, `chmod 700 /proc`; not
 * `/` and the engine's /etc files, which a checkpoint carries), what /dev/shm and /dev/mqueue hold, and how
 * many System V IPC objects exist. One `stat`; the rest builtins, in the harness's shell (no
 * subshell: its variables are unset after). Read in the parent at checkpoint time and in the
 * child while its shell is restored: they must be equal.
 */
const OUTSIDE_LAYER_SCRIPT = String.raw`shopt -s nullglob dotglob
mapfile -t __p < /proc/self/mountinfo
__m=()
for __l in "${'$'}{__p[@]}"; do __l=${'$'}{__l#* * * * }; __l=${'$'}{__l%% *}; [[ $__l == / || $__l == /etc/* ]] || __m+=("$__l"); done
stat -c 'stat %n %F %a %u %g %t %T' -- /dev/* "${'$'}{__m[@]}" 2>&1
for __p in /dev/shm/* /dev/mqueue/*; do builtin printf 'holds %s\n' "$__p"; done
for __p in /proc/sysvipc/shm /proc/sysvipc/sem /proc/sysvipc/msg; do mapfile -t __m 2>/dev/null < "$__p"; builtin printf 'ipc %s %s\n' "$__p" "${'$'}{#__m[@]}"; done
shopt -u nullglob dotglob
builtin unset -v __m __p __l`;

/** {@link OUTSIDE_LAYER_SCRIPT}'s reading of the sandbox `control` runs in (its harness shell). */
export async function readOutsideLayer(control: CommandRunner): Promise<string> {
  const read = await control.run(OUTSIDE_LAYER_SCRIPT);
  if (read.events.length > 0) throw new OutsideLayerRefusal('unreadable', `reading /dev and the mount points was cut short (${read.events.map((e) => e.kind).join(', ')})`);
  return read.output;
}

/**
 * @throws OutsideLayerRefusal `not-carried` naming the lines that differ, when `child` (read
 *   in the restored sandbox) is not `parent` (read at checkpoint time).
 */
export function requireSameOutsideLayer(parent: string, child: string): void {
  if (parent === child) return;
  const [p, c] = [new Set(parent.split('\n')), new Set(child.split('\n'))];
  const differ = [...[...p].filter((line) => !c.has(line)).map((line) => `- ${line}`), ...[...c].filter((line) => !p.has(line)).map((line) => `+ ${line}`)];
  throw new OutsideLayerRefusal(
    'not-carried',
    `the episode changed what a checkpoint does not carry (/dev, /dev/shm, the mount points or IPC objects): ${differ.slice(0, 4).join('; ')}`,
    { differ: differ.slice(0, 20) },
  );
}
