/**
 * One finding of `intercode doctor` about what sandboxes need (an engine, a cluster): `fail`
 * makes the machine unhealthy, `warn` works with a limitation. A backend reports its own
 * (see SandboxBackend.doctorChecks); doctor adds the host's.
 */
export interface HealthCheck {
  id: string;
  status: 'ok' | 'warn' | 'fail';
  summary: string;
  /** What to run or change, when the status is not ok. */
  fix?: string;
}
