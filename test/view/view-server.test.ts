/**
 * The viewer's server and static folder over runs with hostile observations (markup, a
 * textarea break-out, terminal escapes, invalid UTF-8, a 10 MB line): only this machine is
 * answered, nothing an agent printed becomes markup, long texts are clipped with the whole
 * behind a plain-text link, and the static folder links only to files it wrote.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EPISODE_TEXT_LIMIT } from '../../src/view/view-pages.js';
import { showText, ViewServer, visibleControls, writeStaticSite } from '../../src/view/index.js';
import { tempDir } from '../setup/temp-dirs.js';
import { LONG_OBSERVATION, makeProjectRuns } from './project-runs.js';

let root: string;
let server: ViewServer;
let port: number;
const renderPlot = () => '<!doctype html><title>curves</title>';

beforeAll(async () => {
  root = tempDir('ic-view-server-');
  await makeProjectRuns(root, { hostile: true });
  server = await ViewServer.start({ paths: [root], base: root, port: 0, renderPlot });
  port = Number(new URL(server.url).port);
}, 60_000);
afterAll(() => server?.close());

function get(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

const hrefs = (html: string) => [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]!.replaceAll('&amp;', '&'));

describe('who is answered', () => {
  it('localhost, 127.0.0.1 and [::1] in Host and Origin; another site never', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) expect((await get('/', { host })).status, host).toBe(200);
    expect((await get('/', { origin: 'http://localhost:3000' })).status).toBe(200);
    expect((await get('/', { origin: 'http://[::1]:9' })).status).toBe(200);
    for (const headers of [{ host: `evil.example:${port}` }, { origin: 'http://evil.example' }, { origin: 'null' }, { host: `127.0.0.1.evil.example:${port}` }] as Record<string, string>[]) {
      const answer = await get('/', headers);
      expect(answer.status, JSON.stringify(headers)).toBe(403);
      expect(answer.body).not.toContain('episodes');
    }
    expect((await get('/', {}, 'POST')).status).toBe(405);
  });

  it('every page carries a CSP with no script source, and no page has a script', async () => {
    const index = await get('/');
    expect(index.headers['content-security-policy']).toMatch(/^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'$/);
    expect(index.headers['x-content-type-options']).toBe('nosniff');
    for (const href of hrefs(index.body).filter((h) => h.startsWith('/s/'))) {
      const page = await get(href);
      expect(page.status, href).toBe(200);
      expect(page.body).not.toMatch(/<script|<img|onerror=|<\/textarea>/i);
    }
  });
});

describe('hostile observations', () => {
  it('render as text: markup escaped, escapes visible, invalid UTF-8 as U+FFFD', async () => {
    const listing = await get('/s/0');
    const evalIndex = hrefs((await get('/')).body).find((h) => /^\/s\/\d+$/.test(h) && true);
    expect(evalIndex).toBeDefined();
    const journal = (await get('/')).body.match(/href="(\/s\/\d+)">eval episodes: episodes\.jsonl/)![1]!;
    const page = (await get(journal)).body;
    const episodeHref = hrefs(page).find((h) => h.includes('/e/') && page.includes(`href="${h}">1<`))!;
    const episode = (await get(episodeHref)).body;
    expect(episode).toContain(showText('<script>document.title=\'pwned\'</script></textarea></pre>'));
    expect(episode).toContain('\u241b[31mRED\u241b[0m\u241b]0;title\u2407');
    expect(episode).toContain('\ufffd\ufffd\ufffd');
    expect(episode).not.toMatch(/<script|<img|<\/textarea>/i);
    expect(listing.status).toBe(200);
  });

  it('a 10 MB observation is shown clipped on its page, whole as plain text behind a link', async () => {
    const journal = (await get('/')).body.match(/href="(\/s\/\d+)">eval episodes: episodes\.jsonl/)![1]!;
    const page = (await get(journal)).body;
    const episodeHref = hrefs(page).find((h) => h.includes('/e/') && page.includes(`href="${h}">1<`))!;
    const episode = (await get(episodeHref)).body;
    expect(episode).toContain(`${LONG_OBSERVATION - EPISODE_TEXT_LIMIT} more characters`);
    const raw = hrefs(episode).find((h) => h.endsWith('/1/observation'))!;
    const whole = await get(raw);
    expect(whole.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(whole.headers['content-security-policy']).toContain('sandbox');
    expect(whole.body).toHaveLength(LONG_OBSERVATION);
    expect(whole.body.endsWith('THEEND')).toBe(true);
  });

  it('control characters become control pictures, lone surrogates U+FFFD', () => {
    expect(visibleControls('a\u001b[1mb\u0000\r\n\tc\u009b\ud800')).toBe('a\u241b[1mb\u2400\u240d\n\tc\u2370\ufffd');
    expect(showText('<a href="x">&\'')).toBe('&lt;a href=&quot;x&quot;&gt;&amp;&#39;');
  });

  it('a missing episode or page is a page that says so, not a crash', async () => {
    expect((await get('/s/0/e/7')).status).toBe(422);
    expect((await get('/s/999')).status).toBe(404);
    expect((await get('/s/0/e/%E0%A4%A')).status).toBe(404);
  });
});

describe('--static', () => {
  it('writes every page, each link to a file it wrote, no script anywhere', async () => {
    const dir = join(tempDir('ic-view-static-'), 'site');
    const result = await writeStaticSite({ dir, paths: [root], base: root, renderPlot });
    expect(result.episodes).toBeGreaterThan(20);
    const files = readdirSync(dir);
    expect(files).toContain('index.html');
    for (const file of files.filter((f) => f.endsWith('.html'))) {
      const html = readFileSync(join(dir, file), 'utf8');
      expect(html, file).not.toMatch(/<script|<img|<\/textarea>/i);
      for (const href of hrefs(html)) expect(existsSync(join(dir, href)), `${file} → ${href}`).toBe(true);
    }
    expect(files.some((f) => f.endsWith('-1-observation.txt'))).toBe(true);
    await expect(writeStaticSite({ dir, paths: [root], base: root, renderPlot })).rejects.toThrow('--static');
  });
});
