import { connect, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';

/** A masked WebSocket frame, as a client must send it (RFC 6455 §5.2), for payloads < 64 KiB. */
export function clientFrame(opcode: number, payload: Buffer): Buffer {
  const mask = randomBytes(4);
  const header = payload.length < 126 ? Buffer.from([0x80 | opcode, 0x80 | payload.length]) : Buffer.from([0x80 | opcode, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]!));
  return Buffer.concat([header, mask, masked]);
}

/**
 * A bare TCP client that upgrades to WebSocket on `/ws`, sends `messages`, answers the
 * server's pings, and waits until a text message from the server contains `until`. Then
 * it stops doing anything — never reads, never answers a ping again: the caller holds a
 * half-open connection (as when the peer vanished without a FIN).
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
  let buffer = Buffer.alloc(0);
  let upgraded = false;
  let texts = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${until} within ${timeoutMs} ms; got ${JSON.stringify(texts.slice(-300))}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (!upgraded) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        upgraded = true;
        buffer = buffer.subarray(end + 4);
        for (const message of messages) socket.write(clientFrame(0x1, Buffer.from(message)));
      }
      // Server frames are unmasked: opcode, length (7 bits, or 16/64 bits extended), payload.
      while (buffer.length >= 2) {
        const opcode = buffer[0]! & 0x0f;
        let length = buffer[1]! & 0x7f;
        let offset = 2;
        if (length === 126) {
          if (buffer.length < 4) return;
          length = buffer.readUInt16BE(2);
          offset = 4;
        } else if (length === 127) {
          if (buffer.length < 10) return;
          length = Number(buffer.readBigUInt64BE(2));
          offset = 10;
        }
        if (buffer.length < offset + length) return;
        const payload = buffer.subarray(offset, offset + length);
        buffer = buffer.subarray(offset + length);
        if (opcode === 0x9) socket.write(clientFrame(0xa, payload));
        if (opcode === 0x1) texts += payload.toString('utf8');
      }
      if (texts.includes(until)) {
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
