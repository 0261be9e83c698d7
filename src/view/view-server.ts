/**
 * `intercode view`'s HTTP server: one listener on 127.0.0.1 that answers only requests
 * from this machine (Host and Origin loopback, the check `serve` makes without a token:
 * src/server/auth.ts), so no web page the user visits can read the trajectories through
 * the user's browser (DNS rebinding included). Only GET and HEAD; every page carries a
 * Content-Security-Policy that allows no script at all and styles from the one stylesheet.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, IntercodeError } from '../errors.js';
import { fromThisMachine } from '../server/auth.js';
import { OUTCOMES, type EpisodeFilter, type Outcome } from './episode-source.js';
import type { TrainingRun } from './discover.js';
import { ViewCatalogue } from './view-catalogue.js';
import { episodePage, groupPage, indexPage, listingPage, problemPage, RAW_FIELDS, rawText, type RawField, type ViewLinks } from './view-pages.js';
import { VIEW_CSP } from './view-style.js';

/** The pages' policy (see VIEW_CSP), and no framing by another page. */
const PAGE_CSP = `${VIEW_CSP}; frame-ancestors 'none'`;
/** The learning-curves page (`plot`'s) styles itself inline and draws SVG; it runs no script either. */
const PLOT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const PAGE_SIZE = 50;

export interface ViewServerOptions {
  /** Folders and files to look for runs in. */
  paths: readonly string[];
  /** Relative paths are taken from here (the command's working directory). */
  base: string;
  port: number;
  /** Draws a training run's learning curves as an HTML page (the `plot` command's). */
  renderPlot: (run: TrainingRun) => string;
}

/** The server's addresses. */
export const SERVER_LINKS: ViewLinks = {
  home: '/',
  source: (i, f) => `/s/${i}${query(f, null)}`,
  episode: (i, ref) => `/s/${i}/e/${encodeURIComponent(ref)}`,
  group: (i, ref) => `/s/${i}/g/${encodeURIComponent(ref)}`,
  raw: (i, ref, turn, field) => `/s/${i}/raw/${encodeURIComponent(ref)}/${turn}/${field}`,
  plot: (i) => `/t/${i}`,
};

function query(filter: EpisodeFilter, from: string | null): string {
  const params = new URLSearchParams();
  if (filter.outcome) params.set('outcome', filter.outcome);
  if (filter.env) params.set('env', filter.env);
  if (filter.task) params.set('taskId', filter.task);
  if (from !== null) params.set('from', from);
  const text = params.toString();
  return text ? `?${text}` : '';
}

function filterOf(params: URLSearchParams): EpisodeFilter {
  const outcome = params.get('outcome');
  const env = params.get('env')?.trim();
  const task = params.get('taskId')?.trim();
  return {
    ...(outcome && (OUTCOMES as readonly string[]).includes(outcome) ? { outcome: outcome as Outcome } : {}),
    ...(env ? { env } : {}),
    ...(task ? { task } : {}),
  };
}

class NotFound extends Error {}

export class ViewServer {
  private constructor(private readonly server: Server, readonly url: string) {}

  /**
   * Starts listening on 127.0.0.1:`port` (0: any free port).
   * @throws ConfigError naming `--port` when the port is taken or not allowed.
   */
  static async start(options: ViewServerOptions): Promise<ViewServer> {
    const catalogue = new ViewCatalogue(options.paths, options.base);
    await catalogue.refresh();
    const server = createServer((request, response) => {
      void answer(request, response, catalogue, options).catch((error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        if (!response.headersSent) send(response, error instanceof NotFound ? 404 : error instanceof IntercodeError ? 422 : 500, problemPage('cannot show this', message, SERVER_LINKS));
        else response.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'EADDRINUSE') reject(new ConfigError('--port', `${options.port} is in use on 127.0.0.1: give another port, or --port 0 for any free one`));
        else if (error.code === 'EACCES') reject(new ConfigError('--port', `${options.port} may not be opened by this user: give a port above 1023, or --port 0`));
        else reject(error);
      });
      server.listen(options.port, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    return new ViewServer(server, `http://127.0.0.1:${port}`);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

function send(response: ServerResponse, status: number, body: string, type = 'text/html; charset=utf-8', csp = PAGE_CSP): void {
  response.writeHead(status, {
    'content-type': type,
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-resource-policy': 'same-origin',
    'x-frame-options': 'DENY',
    'cache-control': 'no-store',
  });
  response.end(response.req.method === 'HEAD' ? undefined : body);
}

async function answer(request: IncomingMessage, response: ServerResponse, catalogue: ViewCatalogue, options: ViewServerOptions): Promise<void> {
  if (!fromThisMachine(request)) return send(response, 403, 'Host and Origin must be loopback (localhost, 127.0.0.1, [::1])\n', 'text/plain; charset=utf-8');
  if (request.method !== 'GET' && request.method !== 'HEAD') return send(response, 405, 'only GET and HEAD\n', 'text/plain; charset=utf-8');
  const url = new URL(request.url ?? '/', 'http://127.0.0.1');
  let parts: string[];
  try {
    parts = url.pathname.split('/').slice(1).map((p) => decodeURIComponent(p));
  } catch {
    throw new NotFound(`no page ${url.pathname}`);
  }
  if (url.pathname === '/') return send(response, 200, indexPage(await catalogue.refresh(), SERVER_LINKS));
  const { sources, runs } = catalogue.current();
  if (parts[0] === 't' && parts.length === 2) {
    const run = runs[Number(parts[1])]?.training;
    if (!run) throw new NotFound(`no training run ${parts[1]}`);
    return send(response, 200, options.renderPlot(run), 'text/html; charset=utf-8', PLOT_CSP);
  }
  if (parts[0] !== 's' || parts[1] === undefined || !/^\d+$/.test(parts[1])) throw new NotFound(`no page ${url.pathname}`);
  const index = Number(parts[1]);
  const source = sources[index];
  if (!source) throw new NotFound(`no file ${index}: the front page lists them`);
  if (parts.length === 2) {
    const filter = filterOf(url.searchParams);
    const from = url.searchParams.get('from');
    const page = await source.page(from, filter, PAGE_SIZE);
    const outcomeHrefs = Object.fromEntries((['all', ...OUTCOMES] as const).map((o) => [o, `/s/${index}${query({ ...filter, ...(o === 'all' ? { outcome: undefined } : { outcome: o }) }, null)}`])) as Record<'all' | Outcome, string>;
    return send(
      response,
      200,
      listingPage(
        {
          index,
          source,
          filter,
          entries: page.entries,
          nextHref: page.next === null ? null : `/s/${index}${query(filter, page.next)}`,
          cursorNote: from === null ? null : `from ${/^\d+$/.test(from) ? `${from}` : from}; back to the first page with the links above`,
          partial: page.partial,
          problems: page.problems,
          form: { action: `/s/${index}` },
          outcomeHrefs,
        },
        SERVER_LINKS,
      ),
    );
  }
  const ref = parts[3];
  if (ref === undefined) throw new NotFound(`no page ${url.pathname}`);
  if (parts[2] === 'e' && parts.length === 4) return send(response, 200, episodePage(index, source, ref, await source.episode(ref), SERVER_LINKS));
  if (parts[2] === 'g' && parts.length === 4) return send(response, 200, groupPage(index, source, await source.group(ref), SERVER_LINKS));
  if (parts[2] === 'raw' && parts.length === 6 && (RAW_FIELDS as readonly string[]).includes(parts[5]!)) {
    const text = rawText(await source.episode(ref), Number(parts[4]), parts[5] as RawField);
    if (text === undefined) throw new NotFound('the episode has no such text');
    // Plain text, never sniffed as HTML, sandboxed should a browser render it anyway.
    return send(response, 200, text, 'text/plain; charset=utf-8', `${PAGE_CSP}; sandbox`);
  }
  throw new NotFound(`no page ${url.pathname}`);
}
