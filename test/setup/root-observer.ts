/**
 * What the episode-root equivalence test observes of a sandbox beyond its files (see
 * test/integration/root-equivalence.test.ts): the process's capabilities, seccomp and
 * limits, the mount table, cgroups, processes, network, IPC, /dev, the engine's /etc files,
 * the environment. Each line is keyed (`sys\t<what>\t<value>`); values that differ between
 * any two new containers by nature (the container's id, inode and mount numbers, creation
 * times, the host paths of its layers) are replaced by a placeholder.
 */
import { OBSERVER } from './restore-observer.js';

const SYSTEM = [
  String.raw`grep -E '^(Cap|Seccomp|NoNewPrivs|Umask)' /proc/self/status | sed 's/^/status\t/'`,
  String.raw`awk '{ n++; sub(/^[0-9]+ [0-9]+ [0-9]+:[0-9]+ /, ""); print "mountinfo\t" n "\t" $0 }' /proc/self/mountinfo`,
  String.raw`sed 's/^/cgroup\t/' /proc/self/cgroup`,
  String.raw`for f in memory/memory.limit_in_bytes memory/memory.memsw.limit_in_bytes pids/pids.max cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us cpu/cpu.shares cpuset/cpuset.cpus devices/devices.list; do while IFS= read -r l; do printf 'cgfile\t%s\t%s\n' "$f" "$l"; done < /sys/fs/cgroup/$f; done`,
  String.raw`ls -la --time-style=+ /sys/fs/cgroup /dev /dev/shm /dev/mqueue /dev/pts | sed 's/^/ls-sys\t/'`,
  // ps alone in its subshell (a pipe's other side could be caught between fork and exec).
  String.raw`processes=$(ps -eo pid,ppid,args); printf '%s\n' "$processes" | sed 's/^/ps\t/'`,
  String.raw`sed 's/^/if_inet6\t/' /proc/net/if_inet6; awk 'NR > 2 { print "netdev\t" $0 }' /proc/net/dev; sed 's/^/route\t/' /proc/net/route`,
  String.raw`for f in /proc/sysvipc/msg /proc/sysvipc/sem /proc/sysvipc/shm; do awk -v f="$f" 'NR > 1 { print "ipc\t" f "\t" $0 }' "$f"; done`,
  String.raw`for k in net/ipv4/ip_unprivileged_port_start net/ipv4/ping_group_range kernel/hostname kernel/ns_last_pid; do printf 'sysctl\t%s\t%s\n' "$k" "$(cat /proc/sys/$k)"; done`,
  String.raw`for f in /etc/hostname /etc/hosts /etc/resolv.conf; do printf 'etc\t%s\t%s\n' "$f" "$(cat "$f" | tr '\n' '|')"; done`,
  String.raw`env | LC_ALL=C sort | sed 's/^/env\t/'; printf 'id\t%s\n' "$(id)"; printf 'hostname\t%s\n' "$(hostname)"; ulimit -a | sed 's/^/ulimit\t/'`,
  String.raw`touch /proc/sysrq-trigger 2>&1 | sed 's/^/ro\t/'; echo 1 > /proc/sys/kernel/ns_last_pid 2>&1 | sed 's/^/ro\t/'; mount -t tmpfs none /mnt 2>&1 | sed 's/^/denied\t/'; unshare -U true 2>&1 | sed 's/^/denied\t/'`,
].join('; ');

/** The file observers (restore-observer.ts) and the system ones, in one bash script. */
export const ROOT_OBSERVER = `${OBSERVER}; ${SYSTEM}`;

/** Replaces what two new containers of one image never share by a placeholder. */
export function normalizeSystemLine(line: string): string {
  return line
    .replace(/[0-9a-f]{64}/g, '<id>')
    .replace(/lowerdir=[^,\s]+,upperdir=[^,\s]+,workdir=[^,\s]+/, 'lowerdir=<layers>')
    .replace(/ \/\S*\/(hostname|shared) \/etc\/hostname /, ' <host>/$1 /etc/hostname ')
    .replace(/^(mountinfo\t\d+\t)\/\S*intercode-ts-channels\/\S+ \/run\/intercode /, '$1<channel> /run/intercode ')
    .replace(/^(mountinfo\t\d+\t\/\S+) \/etc\/hostname/, (_, head: string) => `${head.replace(/\t\/\S+$/, '\t<host>/hostname')} /etc/hostname`)
    .replace(/master:\d+/g, 'master:<n>')
    .replace(/shared:\d+/g, 'shared:<n>')
    .replace(/^(sysctl\tkernel\/ns_last_pid\t)\d+$/, '$1<n>')
    // The idle process's id: 6 to 8 in a new container (the runtime's set-up took the ids before it).
    .replace(/^ps\t +\d+ +1 intercode-idle infinity$/, 'ps\t<idle> 1 intercode-idle infinity');
}

/**
 * `ps` lines of the observer's own children without their ids: the engine's exec takes 5 or 6
 * ids of a container after the exec'd process's own (runc's init threads; measured 5, 5, 6, 6,
 * 5, 5 in six execs), so they differ between two new containers. Roots take a fixed number:
 * two roots are compared without this.
 */
export function withoutExecChildIds(text: string, observerPid: number): string {
  return text.replace(new RegExp(`^ps\\t +\\d+ +${observerPid} `, 'gm'), `ps\t<child of ${observerPid}> `);
}
