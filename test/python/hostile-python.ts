/** Python actions a hostile agent sends to reach the harness through the driver's streams (shared by the Python attack tests). */

/** Python that finds the driver process (its argv names driver.py, or it is the worker's parent). */
const FIND_DRIVER = [
  'import os',
  'def _driver_pid():',
  '    for p in os.listdir("/proc"):',
  '        if p.isdigit():',
  '            try:',
  '                argv = open(f"/proc/{p}/cmdline", "rb").read().split(b"\\0")',
  '            except OSError:',
  '                continue',
  '            if any(b"\\x1eIC" in a or a.endswith(b"driver.py") for a in argv) or (len(argv) > 3 and len(argv[-2]) == 16):',
  '                return int(p), argv',
  '    return os.getppid(), open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\\0")',
].join('\n');

/**
 * Python that writes `data` (a bytes expression; `_nonce` is the driver's frame nonce) into
 * every stream the driver holds open for writing (`w`: its replies to the host) or for
 * reading (`r`: the host's requests), the /dev/null and sockets aside.
 */
export const WRITE_TO_DRIVER_STREAMS = (data: string, mode: 'w' | 'r' = 'w') =>
  [
    FIND_DRIVER,
    '_pid, _argv = _driver_pid()',
    // The agent's driver has its nonce in its argv; a process with none (the scorer's, which gets it in a frame) gets a guessed one.
    '_nonce = ([a for a in _argv if len(a) == 16] or [b"0" * 16])[-1].decode()',
    '_payload = ' + data,
    // How many writes reached one of the driver's streams (a test may show the attack was mounted).
    '_written = 0',
    'for fd in os.listdir(f"/proc/{_pid}/fd"):',
    '    target = os.readlink(f"/proc/{_pid}/fd/{fd}")',
    '    flags = int(open(f"/proc/{_pid}/fdinfo/{fd}").read().split("flags:")[1].split()[0], 8)',
    `    if target != "/dev/null" and not target.startswith("socket:") and flags & 3 == ${mode === 'w' ? 1 : 0}:`,
    '        try:',
    '            w = os.open(f"/proc/{_pid}/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK)',
    '            os.write(w, _payload)',
    '            os.close(w)',
    '            _written += 1',
    '        except OSError:',
    '            pass',
  ].join('\n');

/** An action that writes `\x1eIC<nonce> 5\nabcde` (a frame whose payload is not JSON) onto the driver's stream to the host, then waits for it to arrive. */
export const MALFORMED_FRAME_ACTION = WRITE_TO_DRIVER_STREAMS('("\\x1eIC" + _nonce + " 5\\nabcde").encode()') + '\nimport time\ntime.sleep(0.5)';

/**
 * Python defining `_forge(reader, writer, payload)`: writes `payload` (bytes) into every pipe
 * that process `reader` holds open for reading and process `writer` for writing (the result
 * pipe from `writer` to `reader`), reopened through `/proc/<reader>/fd` (so it needs no
 * descriptor of its own); returns the bytes written. `_ppid(pid)` is a process's parent and
 * `_frame(obj)` the harness's result frame `<length>\n<JSON>` for `obj`.
 */
export const FORGE_ON_RESULT_PIPE = [
  'import os, json',
  'def _ppid(pid):',
  '    s = open(f"/proc/{pid}/stat").read()',
  '    return int(s[s.rfind(")") + 2:].split()[1])',
  'def _pipes(pid, mode):',
  '    found = {}',
  '    for fd in os.listdir(f"/proc/{pid}/fd"):',
  '        try:',
  '            target = os.readlink(f"/proc/{pid}/fd/{fd}")',
  '            flags = int(open(f"/proc/{pid}/fdinfo/{fd}").read().split("flags:")[1].split()[0], 8)',
  '        except (OSError, IndexError):',
  '            continue',
  '        if target.startswith("pipe:") and flags & 3 == mode:',
  '            found[target] = fd',
  '    return found',
  'def _forge(reader, writer, payload):',
  '    written = 0',
  '    readers = _pipes(reader, 0)',
  '    for target in _pipes(writer, 1):',
  '        if target in readers:',
  '            try:',
  '                w = os.open(f"/proc/{reader}/fd/{readers[target]}", os.O_WRONLY | os.O_NONBLOCK)',
  '                written += os.write(w, payload)',
  '                os.close(w)',
  '            except OSError:',
  '                pass',
  '    return written',
  'def _frame(obj):',
  '    p = json.dumps(obj).encode()',
  '    return str(len(p)).encode() + b"\\n" + p',
].join('\n');
