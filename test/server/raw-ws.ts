import { connect, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';

/** A masked WebSocket text frame, as a client must send it (RFC 6455 §5.2), for payloads < 64 KiB. */
export function clientTextFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = randomBytes(4);
  const header = payload.length < 126 ? Buffer.from([0x81, 0x80 | payload.length]) : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]!));
  return Buffer.concat([header, mask, masked]);
}

/**
 * A bare TCP client that upgrades to WebSocket on `/ws`, sends `messages` and waits until
 * the server's replies contain `until` — then it is left to the caller, who makes it
 * half-open by never reading or answering again.
 */
export async function rawSession(port: number, messages: string[], until: string, timeoutMs = 60_000): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.write(
    'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  let seen = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${until} within ${timeoutMs} ms; got ${JSON.stringify(seen.slice(-300))}`)), timeoutMs);
    let sent = false;
    const onData = (chunk: Buffer) => {
      seen += chunk.toString('latin1');
      if (!sent && seen.includes('\r\n\r\n')) {
        sent = true;
        for (const message of messages) socket.write(clientTextFrame(message));
      }
      if (seen.includes(until)) {
        socket.off('data', onData);
        clearTimeout(timer);
        resolve();
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
  return socket;
}
