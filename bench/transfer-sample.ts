/** A step answer as a shard sends one: a bash step's observation, exit code, events and score. */
export function sampleStepAnswer(id: number) {
  return {
    id,
    ok: true,
    value: {
      observation: 'total 12\ndrwxr-xr-x 2 root root 4096 Jan  1 00:00 data\n-rw-r--r-- 1 root root  220 Jan  1 00:00 README.md\n-rw-r--r-- 1 root root 1062 Jan  1 00:00 LICENSE\n',
      reward: 0,
      terminated: false,
      truncated: false,
      info: { actionExecuted: true, exitCode: 0, durationMs: 3.2, events: [{ kind: 'exit', code: 0, atMs: 3.1 }], score: { reward: 0, parts: { observation: 0, files: 1 }, details: {} } },
    },
  };
}
