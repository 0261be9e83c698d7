/**
 * Headless Chromium driven over the DevTools protocol (a WebSocket, the `ws` package): open
 * a page, evaluate in it, click, wait for the next page, capture a screenshot. Enough for a
 * test to act as a person does and read the rendered DOM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';

export class Browser {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  private readonly listeners: ((method: string, params: any) => void)[] = [];

  private constructor(private readonly child: ChildProcess, private readonly socket: WebSocket, private readonly profile: string) {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string }; method?: string; params?: unknown };
      if (message.id !== undefined) {
        const waiter = this.waiting.get(message.id);
        this.waiting.delete(message.id);
        if (message.error) waiter?.reject(new Error(message.error.message));
        else waiter?.resolve(message.result);
      } else if (message.method) for (const l of this.listeners) l(message.method, message.params);
    });
  }

  /** Starts Chromium with a fresh profile and attaches to its first page. */
  static async launch(): Promise<Browser> {
    const profile = mkdtempSync(join(tmpdir(), 'ic-view-chromium-'));
    const child = spawn('chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--remote-debugging-port=0', `--user-data-dir=${profile}`, '--window-size=1280,900', 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    const endpoint = await new Promise<string>((resolve, reject) => {
      let text = '';
      const timer = setTimeout(() => reject(new Error(`chromium did not start: ${text.slice(-500)}`)), 60_000);
      child.stderr!.on('data', (c: Buffer) => {
        text += c.toString();
        const match = /DevTools listening on (ws:\/\/\S+)/.exec(text);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
      child.once('exit', (code) => reject(new Error(`chromium exited with ${code}: ${text.slice(-500)}`)));
    });
    const { port } = new URL(endpoint);
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { type: string; webSocketDebuggerUrl: string }[];
    const page = targets.find((t) => t.type === 'page')!;
    const socket = new WebSocket(page.webSocketDebuggerUrl);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const browser = new Browser(child, socket, profile);
    await browser.send('Page.enable');
    await browser.send('Runtime.enable');
    return browser;
  }

  send<T = any>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.nextId++;
    this.socket.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
  }

  /** Events of `method` from now on, collected. */
  collect(method: string): unknown[] {
    const seen: unknown[] = [];
    this.listeners.push((m, p) => m === method && seen.push(p));
    return seen;
  }

  /** Resolves at the next page's load event; rejects after 20 s without one. */
  private loaded(what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no page loaded within 20 s of ${what}`)), 20_000);
      const listener = (method: string) => {
        if (method !== 'Page.loadEventFired') return;
        this.listeners.splice(this.listeners.indexOf(listener), 1);
        clearTimeout(timer);
        resolve();
      };
      this.listeners.push(listener);
    });
  }

  async open(url: string): Promise<void> {
    const loaded = this.loaded(`opening ${url}`);
    await this.send('Page.navigate', { url });
    await loaded;
  }

  /** The value of `expression` in the page (JSON-serialisable). */
  async evaluate<T>(expression: string): Promise<T> {
    const { result, exceptionDetails } = await this.send('Runtime.evaluate', { expression, returnByValue: true });
    if (exceptionDetails) throw new Error(`in the page: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
    return result.value as T;
  }

  /** Clicks the element `selector` names as a person would (mouse down and up at the centre of its first line box: a link wrapped over two lines has none at its overall centre) and waits for the page it opens. */
  async click(selector: string): Promise<void> {
    const box = await this.evaluate<{ x: number; y: number } | null>(`(() => { const el = document.querySelector(${JSON.stringify(selector)}); if (!el) return null; el.scrollIntoView(); const r = el.getClientRects()[0]; return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; })()`);
    if (!box) throw new Error(`nothing on the page matches ${selector}`);
    const loaded = this.loaded(`clicking ${selector} at ${box.x},${box.y}`);
    for (const type of ['mousePressed', 'mouseReleased']) await this.send('Input.dispatchMouseEvent', { type, x: box.x, y: box.y, button: 'left', clickCount: 1 });
    await loaded;
  }

  async screenshot(): Promise<Buffer> {
    const { data } = await this.send<{ data: string }>('Page.captureScreenshot', { format: 'png' });
    return Buffer.from(data, 'base64');
  }

  async close(): Promise<void> {
    this.socket.close();
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
    // The browser is its own process group (detached): its helper processes, which may write
    // the profile after the browser exits (seen under load: ENOTEMPTY), go with it.
    const group = -this.child.pid!;
    try {
      process.kill(group, 'SIGKILL');
    } catch {
      // the group is gone already
    }
    for (let tries = 0; ; tries++) {
      try {
        rmSync(this.profile, { recursive: true, force: true });
        return;
      } catch (error) {
        if (tries >= 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }
}
