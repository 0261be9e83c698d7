/*
 * episode-root: makes, enters and removes episode roots inside one long-lived pool container.
 *
 * An episode root is what a new Docker container of the image is, made again per episode
 * without the engine: new mount, PID, IPC, UTS and network namespaces; an overlay of a fresh
 * upper directory over a new init layer and the image's own layer directories; /proc, /dev,
 * /sys, the cgroup files, the masked and read-only paths mounted in the order the engine's
 * own OCI spec lists them; the spec's capabilities, no_new_privs, rlimits and Docker's
 * seccomp filter; docker-init and the idle process as pid 1 and 7. What "a new container"
 * is comes from a plan file the harness writes from the engine's config.json for the image
 * (src/sandbox/roots/root-plan.ts): this program holds no list of its own.
 *
 * It serves one client over a Unix stream socket (argv[2]); requests and replies are frames
 * of NUL-separated fields, each frame preceded by its length (4 bytes, little-endian):
 *   C seq id dir channel [u]      make root `id` under host directory `dir`; reply: init pid
 *                                 (u: `dir`/upper is there already, a checkpoint's layer the
 *                                 harness extracted into it: used as it is)
 *   L seq id flags cwd nenv env.. nargs args.. in out ctl
 *                                 start a process in root `id` (flags: c = without the harness
 *                                 capability, x = report its exit); reply: its pid here
 *   P seq id pid                  the next process started in the root gets `pid` (or above)
 *   K seq id                      kill every process of the root, release it; reply when gone
 * Replies: R seq ok value | R seq err message.  Events: X pid status (flag x).
 * Guarantees: nothing of this process (descriptors, namespaces, capabilities beyond the
 * plan's) reaches a process it starts; a root's processes all live in that root's PID
 * namespace and cgroups; a failure to set up a root is an error reply, never a half root.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MAX_LIST 256
#define MAX_ROOTS 4096
#define MAX_FRAME (1 << 20)

/* ---- the plan ---------------------------------------------------------------------- */

struct mount_entry {
  char *dest, *type, *source, *data;
  unsigned long flags, propagation;
};
struct init_entry {
  char kind; /* d f l */
  char *path, *target;
  mode_t mode;
};
struct rule {
  char *line;
};

static struct {
  char *lowers;                 /* image layers, top first, joined by ':' */
  struct mount_entry mounts[MAX_LIST];
  int nmounts;
  char *readonly[MAX_LIST];
  int nreadonly;
  char *masked[MAX_LIST];
  int nmasked;
  struct init_entry init[MAX_LIST];
  int ninit;
  char *env[MAX_LIST];
  int nenv;
  char *args[MAX_LIST];
  int nargs;
  char *sysctl_key[MAX_LIST], *sysctl_value[MAX_LIST];
  int nsysctl;
  char *cgroup_name[MAX_LIST], *cgroup_dir[MAX_LIST]; /* hierarchy name, its docker/ dir here */
  int ncgroups;
  char *limit_hier[MAX_LIST], *limit_file[MAX_LIST], *limit_value[MAX_LIST];
  int nlimits;
  char *mode_path[MAX_LIST];    /* mount points whose mode the engine's runtime changes after mounting */
  mode_t mode_value[MAX_LIST];
  int nmodes;
  uint64_t caps;                /* the spec's capabilities, the harness's included */
  int harness_cap;              /* dropped for flag c */
  struct rlimit rlimits[RLIM_NLIMITS]; /* a new container's process's, by resource (read from the reference's /proc/<pid>/limits) */
  int nrlimits;
  char *hostname;
  int idle_last_pid;            /* ns_last_pid before init starts (the idle process is the next) */
  const char *idle_name;        /* argv[0] the init's first child ends up with, when the plan knows it */
  int exec_gap;                 /* ids the engine's exec takes after its process's own (its runtime's threads) */
  char *hostname_content;
  struct sock_fprog seccomp;
} plan;

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "episode-root: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static char **split_tabs(char *line, int *n) {
  static char *fields[64];
  *n = 0;
  for (char *p = line; *n < 64;) {
    fields[(*n)++] = p;
    char *tab = strchr(p, '\t');
    if (!tab) break;
    *tab = 0;
    p = tab + 1;
  }
  return fields;
}

static int cap_number(const char *name) {
  static const char *names[] = {"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID",
                                "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST",
                                "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO",
                                "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
                                "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE",
                                "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
                                "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE"};
  if (strncmp(name, "CAP_", 4) == 0) name += 4;
  for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
    if (strcmp(names[i], name) == 0) return i;
  die("unknown capability %s", name);
  return -1;
}

static uint32_t seccomp_action(const char *name, const char *errno_text) {
  if (strcmp(name, "SCMP_ACT_ALLOW") == 0) return SCMP_ACT_ALLOW;
  if (strcmp(name, "SCMP_ACT_ERRNO") == 0) return SCMP_ACT_ERRNO(*errno_text ? atoi(errno_text) : EPERM);
  if (strcmp(name, "SCMP_ACT_KILL") == 0 || strcmp(name, "SCMP_ACT_KILL_THREAD") == 0) return SCMP_ACT_KILL;
  if (strcmp(name, "SCMP_ACT_KILL_PROCESS") == 0) return SCMP_ACT_KILL_PROCESS;
  if (strcmp(name, "SCMP_ACT_TRAP") == 0) return SCMP_ACT_TRAP;
  if (strcmp(name, "SCMP_ACT_LOG") == 0) return SCMP_ACT_LOG;
  die("unknown seccomp action %s", name);
  return 0;
}

static enum scmp_compare seccomp_op(const char *name) {
  static const struct { const char *name; enum scmp_compare op; } ops[] = {
      {"SCMP_CMP_NE", SCMP_CMP_NE}, {"SCMP_CMP_LT", SCMP_CMP_LT}, {"SCMP_CMP_LE", SCMP_CMP_LE},
      {"SCMP_CMP_EQ", SCMP_CMP_EQ}, {"SCMP_CMP_GE", SCMP_CMP_GE}, {"SCMP_CMP_GT", SCMP_CMP_GT},
      {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};
  for (unsigned i = 0; i < sizeof ops / sizeof *ops; i++)
    if (strcmp(ops[i].name, name) == 0) return ops[i].op;
  die("unknown seccomp operator %s", name);
  return SCMP_CMP_EQ;
}

/* Builds the plan's seccomp filter with libseccomp once and keeps its BPF program: installing
 * it per process then costs one prctl, no compilation. */
static void build_seccomp(char **lines, int nlines, const char *default_action, const char *default_errno,
                          char **arches, int narches) {
  scmp_filter_ctx ctx = seccomp_init(seccomp_action(default_action, default_errno));
  if (!ctx) die("seccomp_init failed");
  /* Docker's filter lets the process raise no_new_privs itself; ours is set before it. */
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  for (int i = 0; i < narches; i++) {
    uint32_t arch = strcmp(arches[i], "SCMP_ARCH_X86_64") == 0 ? SCMP_ARCH_X86_64
                    : strcmp(arches[i], "SCMP_ARCH_X86") == 0  ? SCMP_ARCH_X86
                    : strcmp(arches[i], "SCMP_ARCH_X32") == 0  ? SCMP_ARCH_X32
                                                                : 0;
    /* An architecture this libseccomp cannot add is left out, as runc does. */
    if (arch && arch != seccomp_arch_native()) seccomp_arch_add(ctx, arch);
  }
  for (int i = 0; i < nlines; i++) {
    int n;
    char *copy = strdup(lines[i]);
    char **f = split_tabs(copy, &n);
    if (n < 3) die("bad seccomp line %s", lines[i]);
    int nr = seccomp_syscall_resolve_name(f[2]);
    if (nr == __NR_SCMP_ERROR) continue; /* a name this kernel's table lacks: runc skips it too */
    struct scmp_arg_cmp cmp[6];
    int ncmp = 0;
    for (int a = 3; a < n && ncmp < 6; a++) {
      char *idx = strtok(f[a], ":"), *op = strtok(NULL, ":"), *v1 = strtok(NULL, ":"), *v2 = strtok(NULL, ":");
      if (!idx || !op || !v1) die("bad seccomp argument in %s", lines[i]);
      cmp[ncmp++] = (struct scmp_arg_cmp){(unsigned)atoi(idx), seccomp_op(op), strtoull(v1, NULL, 10),
                                          v2 ? strtoull(v2, NULL, 10) : 0};
    }
    int rc = seccomp_rule_add_array(ctx, seccomp_action(f[0], f[1]), nr, ncmp, cmp);
    if (rc != 0 && rc != -EEXIST) die("seccomp rule %s: %s", lines[i], strerror(-rc));
    free(copy);
  }
  /* Export the program once: a pipe holds it (a few KiB). */
  int fds[2];
  if (pipe(fds) != 0) die("pipe: %m");
  fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
  if (seccomp_export_bpf(ctx, fds[1]) != 0) die("seccomp_export_bpf failed");
  close(fds[1]);
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  for (ssize_t r; (r = read(fds[0], buf + len, cap - len)) > 0;) {
    len += (size_t)r;
    if (len == cap) buf = realloc(buf, cap *= 2);
  }
  close(fds[0]);
  plan.seccomp.len = (unsigned short)(len / sizeof(struct sock_filter));
  plan.seccomp.filter = (struct sock_filter *)buf;
  seccomp_release(ctx);
}

static void read_plan(const char *path) {
  FILE *file = fopen(path, "r");
  if (!file) die("cannot open plan %s: %m", path);
  char *line = NULL, *seccomp_lines[1024], *arches[8], *default_action = "SCMP_ACT_ALLOW", *default_errno = "";
  int nseccomp = 0, narches = 0, seen_seccomp = 0;
  size_t size = 0;
  ssize_t len;
  plan.harness_cap = -1;
  while ((len = getline(&line, &size, file)) > 0) {
    if (line[len - 1] == '\n') line[--len] = 0;
    if (len == 0 || line[0] == '#') continue;
    int n;
    char *copy = strdup(line);
    char **f = split_tabs(copy, &n);
    const char *key = f[0];
#define NEED(k) if (n < (k)) die("plan line needs %d fields: %s", (k), line)
    if (strcmp(key, "lowers") == 0) { NEED(2); plan.lowers = f[1]; }
    else if (strcmp(key, "mount") == 0) {
      NEED(7);
      plan.mounts[plan.nmounts++] = (struct mount_entry){f[1], f[2], f[3], f[6], strtoul(f[4], NULL, 10), strtoul(f[5], NULL, 10)};
    }
    else if (strcmp(key, "readonly") == 0) { NEED(2); plan.readonly[plan.nreadonly++] = f[1]; }
    else if (strcmp(key, "masked") == 0) { NEED(2); plan.masked[plan.nmasked++] = f[1]; }
    else if (strcmp(key, "init") == 0) {
      NEED(4);
      plan.init[plan.ninit++] = (struct init_entry){f[1][0], f[2], n > 4 ? f[4] : NULL, (mode_t)strtoul(f[3], NULL, 8)};
    }
    else if (strcmp(key, "env") == 0) { NEED(2); plan.env[plan.nenv++] = f[1]; }
    else if (strcmp(key, "arg") == 0) { NEED(2); plan.args[plan.nargs++] = f[1]; }
    else if (strcmp(key, "sysctl") == 0) { NEED(3); plan.sysctl_key[plan.nsysctl] = f[1]; plan.sysctl_value[plan.nsysctl++] = f[2]; }
    else if (strcmp(key, "cgroup") == 0) { NEED(3); plan.cgroup_name[plan.ncgroups] = f[1]; plan.cgroup_dir[plan.ncgroups++] = f[2]; }
    else if (strcmp(key, "limit") == 0) {
      NEED(4);
      plan.limit_hier[plan.nlimits] = f[1]; plan.limit_file[plan.nlimits] = f[2]; plan.limit_value[plan.nlimits++] = f[3];
    }
    else if (strcmp(key, "mode") == 0) { NEED(3); plan.mode_path[plan.nmodes] = f[1]; plan.mode_value[plan.nmodes++] = (mode_t)strtoul(f[2], NULL, 8); }
    else if (strcmp(key, "cap") == 0) { NEED(2); plan.caps |= 1ULL << cap_number(f[1]); }
    else if (strcmp(key, "harness-cap") == 0) { NEED(2); plan.harness_cap = cap_number(f[1]); }
    else if (strcmp(key, "rlimit") == 0) {
      NEED(4);
      int resource = atoi(f[1]);
      if (resource < 0 || resource >= RLIM_NLIMITS) die("plan: rlimit %s", f[1]);
      plan.rlimits[resource].rlim_cur = strcmp(f[2], "unlimited") == 0 ? RLIM_INFINITY : strtoull(f[2], NULL, 10);
      plan.rlimits[resource].rlim_max = strcmp(f[3], "unlimited") == 0 ? RLIM_INFINITY : strtoull(f[3], NULL, 10);
      if (resource + 1 > plan.nrlimits) plan.nrlimits = resource + 1;
    }
    else if (strcmp(key, "hostname") == 0) { NEED(2); plan.hostname = f[1]; }
    else if (strcmp(key, "idle-last-pid") == 0) { NEED(2); plan.idle_last_pid = atoi(f[1]); }
    else if (strcmp(key, "idle-name") == 0) { NEED(2); plan.idle_name = f[1]; }
    else if (strcmp(key, "exec-gap") == 0) { NEED(2); plan.exec_gap = atoi(f[1]); }
    else if (strcmp(key, "seccomp-default") == 0) { NEED(3); default_action = f[1]; default_errno = f[2]; seen_seccomp = 1; }
    else if (strcmp(key, "seccomp-arch") == 0) { NEED(2); if (narches < 8) arches[narches++] = f[1]; }
    else if (strcmp(key, "seccomp") == 0) { seccomp_lines[nseccomp++] = strdup(line + strlen("seccomp\t")); }
    else die("unknown plan line: %s", line);
#undef NEED
    if (nseccomp >= 1024) die("too many seccomp rules");
  }
  fclose(file);
  if (!plan.lowers || plan.nargs == 0 || !plan.hostname) die("plan %s lacks lowers, arg or hostname", path);
  if (seen_seccomp) build_seccomp(seccomp_lines, nseccomp, default_action, default_errno, arches, narches);
}

/* ---- roots ------------------------------------------------------------------------- */

enum { NS_MNT, NS_UTS, NS_IPC, NS_NET, NS_PID, NS_COUNT };
static const char *ns_names[NS_COUNT] = {"mnt", "uts", "ipc", "net", "pid"};
static const int ns_flags[NS_COUNT] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWPID};

struct root {
  char id[65];
  char dir[4096];
  pid_t init;
  int ns[NS_COUNT];
  int live;
  int init_reaped; /* its init ended (its idle process exited, or it was killed) and was reaped */
};
static struct root roots[MAX_ROOTS];
static int own_pid_ns = -1;

static struct root *find_root(const char *id) {
  for (int i = 0; i < MAX_ROOTS; i++)
    if (roots[i].live && strcmp(roots[i].id, id) == 0) return &roots[i];
  return NULL;
}

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t w = write(fd, text, strlen(text));
  int saved = errno;
  close(fd);
  errno = saved;
  return w == (ssize_t)strlen(text) ? 0 : -1;
}

/* Errors from a root's set-up travel to the helper over a pipe: "message: strerror". */
static int error_pipe = -1;
static void child_fail(const char *what) {
  char message[512];
  int n = snprintf(message, sizeof message, "%s: %s", what, strerror(errno));
  if (write(error_pipe, message, (size_t)n) < 0) {}
  _exit(127);
}

/* A child of the helper, before it becomes a root's process: errors go to `errors`, and it
 * gets the signal disposition and mask a new process has (the helper blocks SIGCHLD). */
static void become_child(int errors) {
  error_pipe = errors;
  signal(SIGCHLD, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

static void mkdirs(const char *path, mode_t mode) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') { *p = 0; mkdir(buf, mode); *p = '/'; }
  mkdir(buf, mode);
}

/* A mount target inside the new root, made as runc makes it (a folder, or an empty file when
 * the source is one). */
static void make_target(const char *target, const char *source_for_type) {
  struct stat st;
  if (lstat(target, &st) == 0) return;
  int file = 0;
  if (source_for_type && stat(source_for_type, &st) == 0 && !S_ISDIR(st.st_mode)) file = 1;
  if (!file) { mkdirs(target, 0755); return; }
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", target);
  char *slash = strrchr(parent, '/');
  if (slash) { *slash = 0; mkdirs(parent, 0755); }
  int fd = open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
  if (fd >= 0) close(fd);
}

static void set_up_dev(const char *rootfs) {
  static const struct { const char *name; int major, minor; } nodes[] = {
      {"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"tty", 5, 0}, {"urandom", 1, 9}, {"random", 1, 8}};
  char path[4096];
  mode_t old = umask(0);
  for (unsigned i = 0; i < sizeof nodes / sizeof *nodes; i++) {
    snprintf(path, sizeof path, "%s/dev/%s", rootfs, nodes[i].name);
    if (mknod(path, S_IFCHR | 0666, makedev(nodes[i].major, nodes[i].minor)) != 0) child_fail("mknod /dev node");
  }
  umask(old);
  static const struct { const char *target, *name; } links[] = {
      {"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}};
  for (unsigned i = 0; i < sizeof links / sizeof *links; i++) {
    snprintf(path, sizeof path, "%s/dev/%s", rootfs, links[i].name);
    if (symlink(links[i].target, path) != 0) child_fail("symlink in /dev");
  }
}

static void bring_lo_up(void) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) child_fail("socket for lo");
  struct ifreq ifr = {0};
  strcpy(ifr.ifr_name, "lo");
  if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0) child_fail("lo flags");
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0) child_fail("lo up");
  close(s);
}

/* Capabilities, no_new_privs, rlimits and seccomp, as the engine's runtime sets them before
 * the container's first exec; the harness's capability left out when `confined`. */
static void restrict_process(int confined) {
  uint64_t keep = plan.caps;
  if (confined && plan.harness_cap >= 0) keep &= ~(1ULL << plan.harness_cap);
  for (int cap = 0; cap <= 63; cap++) {
    if (keep & (1ULL << cap)) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) child_fail("dropping a capability");
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fail("no_new_privs");
  /* Every limit a new container's process has (the pool's own open-files limit is raised). */
  for (int resource = 0; resource < plan.nrlimits; resource++)
    if (setrlimit(resource, &plan.rlimits[resource]) != 0) child_fail("rlimits");
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  /* Effective and permitted: the kept set; inheritable empty, as the engine's processes show. */
  struct __user_cap_data_struct data[2] = {{(uint32_t)keep, (uint32_t)keep, 0}, {(uint32_t)(keep >> 32), (uint32_t)(keep >> 32), 0}};
  if (syscall(SYS_capset, &header, data) != 0) child_fail("capset");
  if (plan.seccomp.len > 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &plan.seccomp, 0, 0) != 0) child_fail("seccomp");
}

static char *substitute(const char *text, const char *channel, const char *hostname_file) {
  if (strcmp(text, "{channel}") == 0) return (char *)channel;
  if (strcmp(text, "{hostname}") == 0) return (char *)hostname_file;
  return (char *)text;
}

/* The root's first process: runs in the new namespaces, builds the file system, becomes
 * docker-init. Never returns. */
static void root_init(const char *dir, const char *id, const char *channel, int go) {
  char rootfs[4096], path[4096], hostname_file[4096];
  snprintf(rootfs, sizeof rootfs, "%s/merged", dir);
  snprintf(hostname_file, sizeof hostname_file, "%s/hostname", dir);
  /* Wait until the helper has put this process into the root's cgroups. */
  char byte;
  if (read(go, &byte, 1) != 1) _exit(127);
  close(go);
  /* The overlay was mounted shared in the pool's namespace (create_root): here it is its
   * slave, as a container's root is the slave of the engine's mount. */
  if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0) child_fail("making / a slave");
  for (int i = 0; i < plan.nmounts; i++) {
    struct mount_entry *m = &plan.mounts[i];
    char *source = substitute(m->source, channel, hostname_file);
    snprintf(path, sizeof path, "%s%s", rootfs, m->dest);
    int bind = (m->flags & MS_BIND) != 0;
    if (strcmp(m->type, "cgroup") == 0) {
      /* A tmpfs holding each hierarchy's cgroup of this root, bound read-only (runc's way on v1). */
      make_target(path, NULL);
      if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755") != 0) child_fail("cgroup tmpfs");
      for (int c = 0; c < plan.ncgroups; c++) {
        if (strcmp(plan.cgroup_name[c], "unified") == 0) continue; /* Docker binds only the v1 hierarchies */
        char target[4096], from[4096];
        snprintf(target, sizeof target, "%s/%s", path, plan.cgroup_name[c]);
        snprintf(from, sizeof from, "%s/%s", plan.cgroup_dir[c], id);
        mkdir(target, 0755);
        if (mount(from, target, NULL, MS_BIND | MS_REC, NULL) != 0) child_fail("binding a cgroup");
        if (mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
          child_fail("cgroup read-only");
      }
      continue;
    }
    make_target(path, bind ? source : NULL);
    const unsigned long restricting = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
    if (bind) {
      /* A bind takes its flags from a remount of its own (the first mount ignores them). */
      if (mount(source, path, NULL, m->flags & (MS_BIND | MS_REC), NULL) != 0) child_fail(m->dest);
      if ((m->flags & restricting) && mount(NULL, path, NULL, MS_BIND | MS_REMOUNT | (m->flags & restricting), NULL) != 0)
        child_fail("bind remount");
    } else if (mount(source, path, m->type, m->flags, m->data[0] ? m->data : NULL) != 0) {
      child_fail(m->dest);
    }
    if (m->propagation && mount(NULL, path, NULL, m->propagation, NULL) != 0) child_fail("propagation");
    if (strcmp(m->dest, "/dev") == 0) set_up_dev(rootfs);
    if (strcmp(m->dest, "/dev/pts") == 0) {
      snprintf(path, sizeof path, "%s/dev/ptmx", rootfs);
      if (symlink("pts/ptmx", path) != 0) child_fail("ptmx");
    }
  }
  for (int i = 0; i < plan.nmodes; i++) {
    snprintf(path, sizeof path, "%s%s", rootfs, plan.mode_path[i]);
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & 07777) == plan.mode_value[i]) continue;
    if (chmod(path, plan.mode_value[i]) != 0) child_fail("mount point mode");
  }
  /* Kernel settings while /proc/sys is still writable. */
  for (int i = 0; i < plan.nsysctl; i++) {
    char key[512];
    snprintf(key, sizeof key, "%s", plan.sysctl_key[i]);
    for (char *p = key; *p; p++) if (*p == '.') *p = '/';
    snprintf(path, sizeof path, "%s/proc/sys/%s", rootfs, key);
    if (write_file(path, plan.sysctl_value[i]) != 0) child_fail("sysctl");
  }
  /* The idle process's id, as the engine's runtime leaves it (its set-up took the ids before):
   * written through this namespace's own /proc, mounted above, by its first process (the
   * file is the writer's PID namespace's), before the init forks the idle. */
  if (plan.idle_last_pid > 0) {
    char text[32];
    snprintf(text, sizeof text, "%d", plan.idle_last_pid - 1);
    snprintf(path, sizeof path, "%s/proc/sys/kernel/ns_last_pid", rootfs);
    if (write_file(path, text) != 0) child_fail("the idle process's id");
  }
  if (sethostname(plan.hostname, strlen(plan.hostname)) != 0) child_fail("hostname");
  bring_lo_up();
  if (chdir(rootfs) != 0) child_fail("chdir rootfs");
  if (syscall(SYS_pivot_root, ".", ".") != 0) child_fail("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) child_fail("detaching the old root");
  if (chdir("/") != 0) child_fail("chdir /");
  for (int i = 0; i < plan.nreadonly; i++) {
    if (mount(plan.readonly[i], plan.readonly[i], NULL, MS_BIND | MS_REC, NULL) != 0) {
      if (errno == ENOENT) continue;
      child_fail("read-only path");
    }
    if (mount(NULL, plan.readonly[i], NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
      child_fail("read-only path remount");
  }
  for (int i = 0; i < plan.nmasked; i++) {
    struct stat st;
    if (stat(plan.masked[i], &st) != 0) continue;
    int rc = S_ISDIR(st.st_mode) ? mount("tmpfs", plan.masked[i], "tmpfs", MS_RDONLY, NULL)
                                 : mount("/dev/null", plan.masked[i], NULL, MS_BIND, NULL);
    if (rc != 0) child_fail("masked path");
  }
  restrict_process(0);
  if (chdir("/") != 0) child_fail("chdir");
  execve(plan.args[0], plan.args, plan.env);
  child_fail("exec init");
}

#define POOL_PROC "/run/episode-root-proc"

/* A proc of the helper's own that is writable (the container's /proc/sys is not): each root's
 * ns_last_pid is written through it (the file is the writer's PID namespace's). */
static void mount_pool_proc(void) {
  mkdir(POOL_PROC, 0700);
  if (mount("proc", POOL_PROC, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) die("mounting %s: %m", POOL_PROC);
}

/* Makes the next process of `r`'s PID namespace get `pid` (or the first free id above): a
 * child of ours joins the namespace and writes its ns_last_pid (the file is the writer's
 * namespace's), through a proc of the helper's own that is writable. */
static int set_next_pid(struct root *r, int pid) {
  if (setns(r->ns[NS_PID], CLONE_NEWPID) != 0) return -1;
  pid_t child = fork();
  int saved = errno;
  setns(own_pid_ns, CLONE_NEWPID);
  if (child < 0) { errno = saved; return -1; }
  if (child == 0) {
    char text[32];
    snprintf(text, sizeof text, "%d", pid - 1);
    _exit(write_file(POOL_PROC "/sys/kernel/ns_last_pid", text) == 0 ? 0 : 1);
  }
  int status;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) { errno = EIO; return -1; }
  return 0;
}

/* Whether process `pid` is gone or a zombie (its /proc/<pid>/stat says Z or X, or is no more). */
static int gone(pid_t pid) {
  char path[128], stat[256];
  snprintf(path, sizeof path, POOL_PROC "/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  ssize_t n = read(fd, stat, sizeof stat - 1);
  close(fd);
  stat[n > 0 ? n : 0] = 0;
  const char *state = strrchr(stat, ')');
  return !state || state[1] == 0 || state[2] == 'Z' || state[2] == 'X';
}

/* Whether process `pid`'s argv[0] is `name` (1), not yet (0), or it is gone (-1). Its cmdline
 * reads empty while it execs, and for a zombie: only the latter is gone. */
static int runs_as(pid_t pid, const char *name) {
  char path[128], cmdline[256];
  snprintf(path, sizeof path, POOL_PROC "/%d/cmdline", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, cmdline, sizeof cmdline - 1);
  close(fd);
  if (n <= 0) return gone(pid) ? -1 : 0;
  cmdline[n] = 0;
  return strcmp(cmdline, name) == 0;
}

/* Waits until the root's init (`init`, its id here) has started its first child, the idle
 * process or the spec's command, and (with the plan's idle-name) until that child runs as the
 * idle process: the init runs on after the helper's create returns, and an id set for the
 * root's next process (P) before that fork would go to that child instead, and a process list
 * read at once would show the idle's shell, not the idle, as no new container's first exec
 * ever does. Returns 0 once it has (or the init or its child is gone: the root is then lost,
 * as later requests say), -1 after `timeout_ms`. */
static int await_first_child(pid_t init, int timeout_ms) {
  char path[128], buf[64];
  snprintf(path, sizeof path, POOL_PROC "/%d/task/%d/children", init, init);
  for (int waited_us = 0; waited_us < timeout_ms * 1000; waited_us += 100) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0) {
      buf[n] = 0;
      if (!plan.idle_name) return 0;
      int idle = runs_as((pid_t)atoi(buf), plan.idle_name);
      if (idle != 0) return 0;
      usleep(100);
      continue;
    }
    if (gone(init)) return 0;
    usleep(100);
  }
  return -1;
}

static void remove_cgroups(const char *id) {
  char path[4096];
  for (int c = 0; c < plan.ncgroups; c++) {
    snprintf(path, sizeof path, "%s/%s", plan.cgroup_dir[c], id);
    for (int tries = 0; rmdir(path) != 0 && errno == EBUSY && tries < 200; tries++) usleep(500);
  }
}

static void unmount_root(const char *dir) {
  char merged[4096];
  snprintf(merged, sizeof merged, "%s/merged", dir);
  umount2(merged, MNT_DETACH);
}

/* Puts process `pid` ("0": the caller) in root `id`'s cgroup of every hierarchy. The files are
 * opened each time, not held: a pool's descriptors are bounded by the engine's open-files
 * limit (20,000 here), and ~12 per root stopped a pool at ~1,100 roots.
 * @returns the hierarchy that refused it (errno set), or NULL. */
static const char *join_cgroups(const char *id, const char *pid) {
  char path[4096];
  for (int c = 0; c < plan.ncgroups; c++) {
    snprintf(path, sizeof path, "%s/%s/cgroup.procs", plan.cgroup_dir[c], id);
    if (write_file(path, pid) != 0) return plan.cgroup_name[c];
  }
  return NULL;
}

static void close_root(struct root *r) {
  for (int i = 0; i < NS_COUNT; i++) if (r->ns[i] >= 0) close(r->ns[i]);
  r->live = 0;
}

static char *create_root(const char *id, const char *dir, const char *channel, int prepared_upper, char *reply, size_t size) {
  struct root *r = NULL;
  for (int i = 0; i < MAX_ROOTS && !r; i++) if (!roots[i].live) r = &roots[i];
  if (!r) return "too many roots";
  if (strlen(id) != 64 || find_root(id)) return "bad or taken id";
  memset(r, 0, sizeof *r);
  for (int i = 0; i < NS_COUNT; i++) r->ns[i] = -1;
  snprintf(r->id, sizeof r->id, "%s", id);
  snprintf(r->dir, sizeof r->dir, "%s", dir);
  static char message[1024];
  char path[4096];
  /* The episode's directories and its init layer (made now: its times are this root's). */
  const char *parts[] = {"upper", "work", "init", "merged"};
  mkdir(dir, 0700);
  for (int i = prepared_upper ? 1 : 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, parts[i]);
    if (mkdir(path, 0755) != 0) { snprintf(message, sizeof message, "mkdir %s: %s", path, strerror(errno)); return message; }
  }
  snprintf(path, sizeof path, "%s/upper", dir);
  /* A prepared upper keeps the mode its layer gave it (the root folder's: an episode's `chmod /`). */
  struct stat upper_stat;
  if (prepared_upper && (lstat(path, &upper_stat) != 0 || !S_ISDIR(upper_stat.st_mode))) {
    snprintf(message, sizeof message, "the prepared upper %.900s is no folder", path);
    return message;
  }
  if (!prepared_upper) chmod(path, 0755);
  for (int i = 0; i < plan.ninit; i++) {
    struct init_entry *e = &plan.init[i];
    snprintf(path, sizeof path, "%s/init%s", dir, e->path);
    int rc = e->kind == 'd' ? mkdir(path, e->mode)
             : e->kind == 'l' ? symlink(e->target ? e->target : "", path)
                              : close(open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, e->mode));
    if (rc != 0) { snprintf(message, sizeof message, "init layer %s: %s", e->path, strerror(errno)); return message; }
    if (e->kind != 'l') chmod(path, e->mode);
  }
  snprintf(path, sizeof path, "%s/hostname", dir);
  int hf = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (hf < 0 || write(hf, plan.hostname, strlen(plan.hostname)) < 0 || write(hf, "\n", 1) != 1) {
    snprintf(message, sizeof message, "hostname file: %s", strerror(errno));
    if (hf >= 0) close(hf);
    return message;
  }
  close(hf);
  /* The overlay, mounted here and shared. The engine mounts a container's root once before
   * it starts it: that first mount stores overlayfs's uuid on the upper folder, and the
   * container's own mount reads it (its options then show no uuid=on). Stored here. */
  {
    char upper[4096], merged[4096], options[16384];
    unsigned char uuid[16];
    snprintf(upper, sizeof upper, "%s/upper", dir);
    snprintf(merged, sizeof merged, "%s/merged", dir);
    int rnd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = rnd >= 0 ? read(rnd, uuid, sizeof uuid) : -1;
    if (rnd >= 0) close(rnd);
    if (got != (ssize_t)sizeof uuid) { snprintf(message, sizeof message, "urandom: %s", strerror(errno)); return message; }
    uuid[6] = (uuid[6] & 0x0f) | 0x40;
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    if (setxattr(upper, "trusted.overlay.uuid", uuid, sizeof uuid, 0) != 0) { snprintf(message, sizeof message, "overlay uuid: %s", strerror(errno)); return message; }
    snprintf(options, sizeof options, "lowerdir=%s/init:%s,upperdir=%s,workdir=%s/work", dir, plan.lowers, upper, dir);
    if (mount("overlay", merged, "overlay", 0, options) != 0) { snprintf(message, sizeof message, "mounting the overlay: %s", strerror(errno)); return message; }
    if (mount(NULL, merged, NULL, MS_SHARED, NULL) != 0) { snprintf(message, sizeof message, "sharing the overlay: %s", strerror(errno)); umount2(merged, MNT_DETACH); return message; }
  }
  /* Its cgroups, with the plan's limits. */
  for (int c = 0; c < plan.ncgroups; c++) {
    snprintf(path, sizeof path, "%s/%s", plan.cgroup_dir[c], id);
    if (mkdir(path, 0755) != 0) { snprintf(message, sizeof message, "cgroup %s: %s", path, strerror(errno)); goto fail; }
  }
  for (int l = 0; l < plan.nlimits; l++) {
    for (int c = 0; c < plan.ncgroups; c++) {
      if (strcmp(plan.cgroup_name[c], plan.limit_hier[l]) != 0) continue;
      snprintf(path, sizeof path, "%s/%s/%s", plan.cgroup_dir[c], id, plan.limit_file[l]);
      char *value = plan.limit_value[l];
      char inherited[4096];
      if (strcmp(value, "{parent}") == 0) { /* cpuset: the parent's cpus and mems */
        char parent[4096];
        snprintf(parent, sizeof parent, "%s/%s", plan.cgroup_dir[c], plan.limit_file[l]);
        int pf = open(parent, O_RDONLY | O_CLOEXEC);
        ssize_t n = pf >= 0 ? read(pf, inherited, sizeof inherited - 1) : -1;
        if (pf >= 0) close(pf);
        inherited[n > 0 ? n : 0] = 0;
        value = inherited;
      }
      if (write_file(path, value) != 0 && errno != ENOENT) {
        snprintf(message, sizeof message, "cgroup limit %s=%s: %s", path, value, strerror(errno));
        goto fail;
      }
    }
  }
  int errors[2], go[2];
  if (pipe2(errors, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) { snprintf(message, sizeof message, "pipe: %s", strerror(errno)); goto fail; }
  struct clone_args args = {.flags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID, .exit_signal = SIGCHLD};
  pid_t child = (pid_t)syscall(SYS_clone3, &args, sizeof args);
  if (child == 0) {
    close(errors[0]);
    close(go[1]);
    become_child(errors[1]);
    root_init(dir, id, channel, go[0]);
  }
  close(errors[1]);
  close(go[0]);
  if (child < 0) { snprintf(message, sizeof message, "clone3: %s", strerror(errno)); close(errors[0]); close(go[1]); goto fail; }
  r->init = child;
  r->live = 1;
  r->init_reaped = 0;
  char pidtext[32];
  snprintf(pidtext, sizeof pidtext, "%d", child);
  /* Its init in its cgroups before it runs, and its namespaces held: else no root (a root
   * outside its cgroups would run without its limits). */
  const char *cgroup = join_cgroups(id, pidtext);
  int setup_failed = cgroup != NULL;
  if (cgroup) snprintf(message, sizeof message, "joining cgroup %s: %s", cgroup, strerror(errno));
  for (int i = 0; i < NS_COUNT && !setup_failed; i++) {
    snprintf(path, sizeof path, "/proc/%d/ns/%s", child, ns_names[i]);
    r->ns[i] = open(path, O_RDONLY | O_CLOEXEC);
    if (r->ns[i] < 0) {
      snprintf(message, sizeof message, "holding its %s namespace: %s", ns_names[i], strerror(errno));
      setup_failed = 1;
    }
  }
  if (setup_failed) {
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    close(go[1]);
    close(errors[0]);
    close_root(r);
    remove_cgroups(id);
    unmount_root(dir);
    return message;
  }
  if (write(go[1], "g", 1) != 1) {}
  close(go[1]);
  ssize_t n = read(errors[0], message, sizeof message - 1);
  close(errors[0]);
  if (n == 0 && await_first_child(child, 5000) != 0) n = snprintf(message, sizeof message, "the root's init started no process within 5 s");
  if (n > 0) {
    message[n] = 0;
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    close_root(r);
    remove_cgroups(id);
    unmount_root(dir);
    return message;
  }
  snprintf(reply, size, "%d", child);
  return NULL;
fail:
  remove_cgroups(id);
  unmount_root(dir);
  return message;
}

/* The processes started with flag x whose exit is still to be reported (a few at a time). */
#define MAX_REPORTED 1024
static pid_t reported[MAX_REPORTED];
static int nreported;

static void forget_reported(pid_t pid) {
  for (int i = 0; i < nreported; i++)
    if (reported[i] == pid) { reported[i] = reported[--nreported]; return; }
}

/* Whether a launched child's error message refuses the launch: it failed before its pipes
 * were opened and joined. An exec that failed after that is a process that ran and exited 127. */
static int launch_refused(const char *message) {
  return strncmp(message, "opening", 7) == 0 || strncmp(message, "joining", 7) == 0;
}

static void reply(const char *seq, const char *error, const char *value);
static void report_exit(pid_t pid, int status);

/* Launches whose answer waits for their exec (their child's error pipe): the helper serves
 * other requests meanwhile, and answers from its loop (finish_launch). A launched process
 * that ends before its answer has its exit held until then: reported after a success, and
 * dropped after a refusal (the client never learns its id). */
#define MAX_PENDING 256
static struct pending {
  struct root *r;
  int errors;
  pid_t child;
  int exited, status;
  char seq[32];
} pending[MAX_PENDING];
static int npending;
#define LAUNCH_PENDING ((char *)1)

static void finish_launch(int i);

/* Answers every pending launch of `r`, waiting for each: the ids a root's processes get then
 * follow its requests' order, as when every launch was waited for (other roots' go on). */
static void settle_launches(struct root *r) {
  for (int i = npending - 1; i >= 0; i--)
    if (pending[i].r == r) finish_launch(i);
}

static char *launch(struct root *r, const char *flags, const char *cwd, char **env, char **argv,
                    const char *in, const char *out, const char *ctl, const char *seq, char *reply, size_t size) {
  static char message[1024];
  settle_launches(r);
  int errors[2];
  if (pipe2(errors, O_CLOEXEC) != 0) return "pipe";
  if (setns(r->ns[NS_PID], CLONE_NEWPID) != 0) { snprintf(message, sizeof message, "joining the pid namespace: %s", strerror(errno)); close(errors[0]); close(errors[1]); return message; }
  pid_t child = fork();
  int saved = errno;
  setns(own_pid_ns, CLONE_NEWPID);
  if (child == 0) {
    close(errors[0]);
    become_child(errors[1]);
    if (join_cgroups(r->id, "0")) child_fail("joining the root's cgroup");
    if (plan.exec_gap > 0) {
      /* The ids the engine's runtime takes while it starts an exec'd process, taken here too:
       * its first child then gets the id it would in a container. */
      char text[32];
      snprintf(text, sizeof text, "%d", getpid() + plan.exec_gap);
      if (write_file(POOL_PROC "/sys/kernel/ns_last_pid", text) != 0) child_fail("joining: the exec's ids");
    }
    for (int i = 0; i < NS_COUNT; i++)
      if (i != NS_PID && setns(r->ns[i], ns_flags[i]) != 0) child_fail("joining the root's namespaces");
    if (chdir(cwd) != 0) child_fail("chdir");
    int fd_in = open(in, O_RDONLY);
    if (fd_in < 0) child_fail("opening stdin");
    int fd_out = open(out, O_WRONLY);
    if (fd_out < 0) child_fail("opening stdout");
    int fd_ctl = open(ctl, O_WRONLY);
    if (fd_ctl < 0) child_fail("opening the control channel");
    /* Descriptors 0, 1, 2 and 4; 3 stays closed, as in the shell line other runtimes use. */
    int keep_errors = fcntl(error_pipe, F_DUPFD_CLOEXEC, 10);
    if (dup2(fd_in, 0) < 0 || dup2(fd_out, 1) < 0 || dup2(fd_out, 2) < 0 || dup2(fd_ctl, 4) < 0) child_fail("dup2");
    error_pipe = keep_errors;
    close(3);
    /* Every other descriptor, in two calls (error_pipe is above 9, the others below). */
    if (syscall(SYS_close_range, 5, error_pipe - 1, 0) != 0 || syscall(SYS_close_range, error_pipe + 1, ~0U, 0) != 0) child_fail("closing descriptors");
    restrict_process(strchr(flags, 'c') != NULL);
    /* PATH from the process's own environment, as docker exec resolves it. */
    const char *path_env = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (char **e = env; *e; e++) if (strncmp(*e, "PATH=", 5) == 0) path_env = *e + 5;
    if (strchr(argv[0], '/')) execve(argv[0], argv, env);
    else {
      char candidate[4096];
      for (const char *p = path_env; *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        snprintf(candidate, sizeof candidate, "%.*s/%s", (int)len, p, argv[0]);
        execve(candidate, argv, env);
        if (!colon) break;
        p = colon + 1;
      }
    }
    child_fail(argv[0]);
  }
  close(errors[1]);
  if (child < 0) { close(errors[0]); errno = saved; return "fork"; }
  if (strchr(flags, 'x')) {
    if (nreported == MAX_REPORTED) { kill(child, SIGKILL); close(errors[0]); return "too many processes whose exit is awaited"; }
    reported[nreported++] = child;
  }
  if (npending < MAX_PENDING) {
    struct pending *p = &pending[npending++];
    p->r = r;
    p->errors = errors[0];
    p->child = child;
    p->exited = 0;
    snprintf(p->seq, sizeof p->seq, "%s", seq);
    return LAUNCH_PENDING;
  }
  /* As many launches waiting as the table holds: this one is waited for here. */
  ssize_t n = read(errors[0], message, sizeof message - 1);
  close(errors[0]);
  message[n > 0 ? n : 0] = 0;
  if (launch_refused(message)) {
    forget_reported(child);
    return message;
  }
  snprintf(reply, size, "%d", child);
  return NULL;
}

/* Answers pending launch `i`, whose child has exec'd or failed (its error pipe is readable). */
static void finish_launch(int i) {
  struct pending p = pending[i];
  pending[i] = pending[--npending];
  char message[1024];
  ssize_t n = read(p.errors, message, sizeof message - 1);
  close(p.errors);
  message[n > 0 ? n : 0] = 0;
  if (launch_refused(message)) {
    forget_reported(p.child);
    reply(p.seq, message, NULL);
    return;
  }
  char pidtext[32];
  snprintf(pidtext, sizeof pidtext, "%d", p.child);
  reply(p.seq, NULL, pidtext);
  if (p.exited) report_exit(p.child, p.status);
}

/* What a reaped child was: a root's init (whose root is then marked, so that its id, free
 * again, is never killed or awaited as its) or a process whose exit is reported. */
static void reaped(pid_t pid, int status) {
  for (int i = 0; i < MAX_ROOTS; i++)
    if (roots[i].live && roots[i].init == pid) roots[i].init_reaped = 1;
  for (int i = 0; i < npending; i++)
    if (pending[i].child == pid) { pending[i].exited = 1; pending[i].status = status; return; }
  report_exit(pid, status);
}

/* Kills the root's init, and with it (the kernel's doing) every process of its PID namespace.
 * The namespace is gone only once each of its processes is reaped, those we started (our
 * children) included: they are reaped here while the init is waited for. An init that ended
 * by itself (an agent killed the root's idle process: the init exits with it) was reaped
 * already, by the same loop or by reap(). */
static char *kill_root(struct root *r) {
  if (!r->init_reaped) kill(r->init, SIGKILL);
  while (!r->init_reaped) {
    int status;
    pid_t pid = waitpid(-1, &status, __WALL);
    if (pid > 0) reaped(pid, status);
    else if (errno != EINTR) break;
  }
  char id[65];
  snprintf(id, sizeof id, "%s", r->id);
  unmount_root(r->dir);
  close_root(r);
  remove_cgroups(id);
  return NULL;
}

/* ---- folders of killed roots ------------------------------------------------------------ */

/* Removes `path` and all below it. It walks by descriptor, one directory open at a time, so
 * no path grows and no tree is too deep (an agent can nest folders far past PATH_MAX, where
 * nftw and every path-based walk give up and leave them for good). It never follows a link
 * and never enters another file system: a link the agent planted is removed, not its target.
 * Where something cannot be removed it stops, leaving the rest. Called once the root's
 * processes are gone, so nothing below `path` moves meanwhile. */
static void remove_folder(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat top;
  if (fd < 0 || fstat(fd, &top) != 0) {
    if (fd >= 0) close(fd);
    return;
  }
  for (unsigned long depth = 0;;) {
    /* A pass over this directory: files and empty folders go; the first folder that is not
     * empty is entered (the pass starts again there). */
    int entered = -1, stuck = 0;
    int listing = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = listing >= 0 ? fdopendir(listing) : NULL;
    if (!d) {
      if (listing >= 0) close(listing);
      close(fd);
      return;
    }
    for (struct dirent *e; entered < 0 && (e = readdir(d));) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      if (unlinkat(fd, e->d_name, 0) == 0 || errno == ENOENT) continue;
      if (errno != EISDIR) { stuck = 1; continue; }
      if (unlinkat(fd, e->d_name, AT_REMOVEDIR) == 0 || errno == ENOENT) continue;
      if (errno != ENOTEMPTY && errno != EEXIST) { stuck = 1; continue; }
      int child = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      struct stat st;
      if (child >= 0 && fstat(child, &st) == 0 && st.st_dev == top.st_dev) entered = child;
      else {
        if (child >= 0) close(child);
        stuck = 1;
      }
    }
    closedir(d);
    if (entered >= 0) {
      close(fd);
      fd = entered;
      depth++;
      continue;
    }
    /* As empty as it gets. Going up from a folder that is not would enter it again. */
    if (depth == 0 || stuck) {
      close(fd);
      if (depth == 0 && !stuck) rmdir(path);
      return;
    }
    int parent = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    close(fd);
    if (parent < 0) return;
    fd = parent; /* whose next pass removes the folder just emptied */
    depth--;
  }
}

/* A child of the helper's that removes the folders it is sent (NUL-terminated paths): a
 * killed root's folders go off the helper's path, the backlog bounded by the pipe (a full
 * pipe makes the helper wait). -1 where it could not be started, or has gone: the helper
 * then removes them itself. */
static int remover = -1;

static void start_remover(void) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return;
  pid_t child = fork();
  if (child < 0) { close(p[0]); close(p[1]); return; }
  if (child == 0) {
    close(p[1]);
    static char buf[2 * 4096 + 2];
    size_t have = 0;
    for (;;) {
      ssize_t n = read(p[0], buf + have, sizeof buf - 1 - have);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(0);
      have += (size_t)n;
      char *start = buf, *end;
      while ((end = memchr(start, 0, have - (size_t)(start - buf)))) {
        remove_folder(start);
        start = end + 1;
      }
      have -= (size_t)(start - buf);
      memmove(buf, start, have);
      if (have == sizeof buf - 1) have = 0; /* no path is that long: dropped */
    }
  }
  close(p[0]);
  remover = p[1];
}

/* Has `path` removed, by the remover or else here. Only absolute paths below / with no `..`. */
static void remove_later(const char *path) {
  size_t len = strlen(path);
  if (path[0] != '/' || len < 2 || len >= 4096 || strstr(path, "/../") || strcmp(path + len - 3, "/..") == 0) return;
  for (size_t off = 0; remover >= 0 && off < len + 1;) {
    ssize_t w = write(remover, path + off, len + 1 - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) { close(remover); remover = -1; break; }
    off += (size_t)w;
  }
  if (remover < 0) remove_folder(path);
}

/* ---- the channel -------------------------------------------------------------------- */

static int client = -1;
static int exiting = 0;

/* The harness is gone: every root goes with it, and so does the pool container. */
static void release_all_and_exit(void) {
  exiting = 1;
  for (int i = 0; i < MAX_ROOTS; i++) if (roots[i].live) kill_root(&roots[i]);
  exit(0);
}

static void send_frame(char **fields, int n) {
  if (exiting) return;
  static char buf[MAX_FRAME];
  size_t len = 4;
  for (int i = 0; i < n; i++) {
    size_t l = strlen(fields[i]);
    if (len + l + 1 > sizeof buf) l = sizeof buf - len - 1;
    memcpy(buf + len, fields[i], l);
    len += l;
    buf[len++] = 0;
  }
  uint32_t body = (uint32_t)(len - 4);
  memcpy(buf, &body, 4);
  for (size_t off = 0; off < len;) {
    ssize_t w = write(client, buf + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) release_all_and_exit();
    off += (size_t)w;
  }
}

static void reply(const char *seq, const char *error, const char *value) {
  char *fields[] = {"R", (char *)seq, error ? "err" : "ok", (char *)(error ? error : value ? value : "")};
  send_frame(fields, 4);
}

/* Tells the client of the exit of a process started with flag x. */
static void report_exit(pid_t pid, int status) {
  int i = 0;
  while (i < nreported && reported[i] != pid) i++;
  if (i == nreported) return;
  reported[i] = reported[--nreported];
  char pidtext[32], code[32];
  snprintf(pidtext, sizeof pidtext, "%d", pid);
  snprintf(code, sizeof code, "%d", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  char *fields[] = {"X", pidtext, code};
  send_frame(fields, 3);
}

static void reap(void) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG | __WALL)) > 0) reaped(pid, status);
}

static void handle(char **f, int n) {
  char value[64] = "";
  if (n < 3) return;
  const char *op = f[0], *seq = f[1], *id = f[2];
  if (strcmp(op, "F") == 0) {
    /* FIFOs for a root's channel (owner-only), made here rather than by a process per batch. */
    for (int i = 2; i < n; i++) {
      if (f[i][0] != '/' || strstr(f[i], "/../") || mkfifo(f[i], 0600) != 0) {
        static char message[512];
        snprintf(message, sizeof message, "mkfifo %s: %s", f[i], f[i][0] == '/' ? strerror(errno) : "not an absolute path");
        reply(seq, message, NULL);
        return;
      }
    }
    reply(seq, NULL, NULL);
    return;
  }
  if (strcmp(op, "C") == 0 && n >= 5) {
    reply(seq, create_root(id, f[3], f[4], n >= 6 && strcmp(f[5], "u") == 0, value, sizeof value), value);
    return;
  }
  struct root *r = find_root(id);
  if (!r) { reply(seq, "no such root", NULL); return; }
  if (strcmp(op, "K") == 0) {
    /* The folders named after the id (the root's, its channel's) are removed once it is answered. */
    char *refused = kill_root(r);
    reply(seq, refused, NULL);
    if (!refused) for (int i = 3; i < n; i++) remove_later(f[i]);
    return;
  }
  if (strcmp(op, "P") == 0 && n >= 4) {
    settle_launches(r);
    reply(seq, set_next_pid(r, atoi(f[3])) == 0 ? NULL : strerror(errno), NULL);
    return;
  }
  if (strcmp(op, "L") == 0 && n >= 7) {
    int i = 3;
    const char *flags = f[i++];
    const char *cwd = f[i++];
    int nenv = atoi(f[i++]);
    if (nenv < 0 || i + nenv >= n) { reply(seq, "bad launch", NULL); return; }
    char *env[MAX_LIST + 1];
    if (nenv > MAX_LIST) nenv = MAX_LIST;
    for (int e = 0; e < nenv; e++) env[e] = f[i++];
    env[nenv] = NULL;
    int nargs = atoi(f[i++]);
    if (nargs < 1 || nargs > MAX_LIST || i + nargs + 3 > n) { reply(seq, "bad launch", NULL); return; }
    char *argv[MAX_LIST + 1];
    for (int a = 0; a < nargs; a++) argv[a] = f[i++];
    argv[nargs] = NULL;
    char *refused = launch(r, flags, cwd, env, argv, f[i], f[i + 1], f[i + 2], seq, value, sizeof value);
    if (refused != LAUNCH_PENDING) reply(seq, refused, value);
    return;
  }
  reply(seq, "unknown request", NULL);
}

int main(int argc, char **argv) {
  if (argc != 3) die("usage: episode-root PLAN SOCKET");
  read_plan(argv[1]);
  signal(SIGPIPE, SIG_IGN);
  mount_pool_proc();
  start_remover();
  own_pid_ns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
  if (own_pid_ns < 0) die("own pid namespace: %m");
  /* A root holds its 5 namespaces' descriptors here: as many as the pool's hard limit lets
   * (~4,000 roots at 20,000); a root's processes get a new container's limits back
   * (restrict_process). */
  struct rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  int server = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", argv[2]);
  unlink(argv[2]);
  if (bind(server, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(server, 1) != 0) die("socket %s: %m", argv[2]);
  chmod(argv[2], 0600);
  client = accept4(server, NULL, NULL, SOCK_CLOEXEC);
  if (client < 0) die("accept: %m");
  close(server);
  unlink(argv[2]);
  /* SIGCHLD arrives as a readable descriptor beside the client's requests. */
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) die("signalfd: %m");
  static char buf[MAX_FRAME + 4];
  size_t have = 0;
  for (;;) {
    struct pollfd fds[2 + MAX_PENDING] = {{client, POLLIN, 0}, {sigfd, POLLIN, 0}};
    int waiting = npending;
    for (int i = 0; i < waiting; i++) fds[2 + i] = (struct pollfd){pending[i].errors, POLLIN, 0};
    if (poll(fds, (nfds_t)(2 + waiting), -1) < 0) { if (errno == EINTR) continue; die("poll: %m"); }
    if (fds[1].revents & POLLIN) {
      char drain[1024];
      while (read(sigfd, drain, sizeof drain) > 0) {}
      reap();
    }
    /* Launches answered, last first (finish_launch moves the table's last entry into the slot). */
    for (int i = waiting - 1; i >= 0; i--)
      if (fds[2 + i].revents) finish_launch(i);
    if (!(fds[0].revents & (POLLIN | POLLHUP))) continue;
    ssize_t r = read(client, buf + have, sizeof buf - have);
    if (r <= 0) release_all_and_exit();
    have += (size_t)r;
    while (have >= 4) {
      uint32_t len;
      memcpy(&len, buf, 4);
      if (len > MAX_FRAME) die("frame too long");
      if (have < 4 + len) break;
      char *fields[MAX_LIST * 2 + 16];
      int n = 0;
      for (size_t off = 4; off < 4 + len && n < (int)(sizeof fields / sizeof *fields);) {
        fields[n++] = buf + off;
        off += strlen(buf + off) + 1;
      }
      handle(fields, n);
      memmove(buf, buf + 4 + len, have - 4 - len);
      have -= 4 + len;
    }
    reap();
  }
}
