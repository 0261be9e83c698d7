import { createHash } from 'node:crypto';

/** The viewer's one stylesheet, inlined in every page and allowed by its hash: the CSP admits no other style and no script. */
export const VIEW_CSS = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; padding: 12px 20px 40px; max-width: 1400px; color: #1b1b1b; background: #fff; }
h1 { font-size: 20px; margin: 8px 0 12px; } h2 { font-size: 16px; margin: 18px 0 8px; } h3 { font-size: 14px; margin: 10px 0 4px; }
a { color: #0550ae; } nav.crumbs { margin-bottom: 8px; color: #555; }
table { border-collapse: collapse; margin: 6px 0 12px; } th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa; border: 1px solid #d0d7de; padding: 6px 8px; margin: 4px 0; max-height: 480px; overflow: auto; font: 12.5px/1.4 ui-monospace, monospace; }
pre.action { background: #eef6ff; } pre.reply { background: #fffbea; }
.solved { color: #1a7f37; font-weight: 600; } .failed { color: #cf222e; font-weight: 600; } .truncated { color: #9a6700; font-weight: 600; }
.turn { border-left: 3px solid #d0d7de; padding: 2px 0 6px 10px; margin: 12px 0; } .turn .meta { color: #444; }
.filters a, .filters span { margin-right: 10px; } .filters span.active { font-weight: 700; }
.filters form { display: inline-block; margin-left: 12px; } .filters input { width: 9em; }
.group { display: grid; grid-auto-flow: column; grid-auto-columns: minmax(320px, 1fr); gap: 12px; overflow-x: auto; }
.group > section { border: 1px solid #d0d7de; padding: 6px 8px; min-width: 0; }
.note { color: #555; } .problem { color: #cf222e; } .clipped { color: #9a6700; }
`;

/**
 * The pages' Content-Security-Policy: nothing loads or runs but this stylesheet (by its
 * hash; works for the static folder's file:// pages too, where 'self' matches nothing),
 * forms submit only here. Sent as a header by the server and as a meta tag in every page.
 */
export const VIEW_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(VIEW_CSS).digest('base64')}'; img-src 'self'; form-action 'self'; base-uri 'none'`;
