/**
 * Agent-controlled text made safe to show: every character that HTML gives a meaning is
 * escaped, and control characters (ANSI escapes, NUL, a carriage return that would hide a
 * line) become visible symbols, so what the agent wrote is shown, never obeyed.
 */

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `text` with `& < > " '` escaped: safe in element content and in a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/**
 * `text` with C0 controls (but tab and newline), DEL and C1 controls shown as Unicode's
 * control pictures (ESC → ␛, NUL → ␀; C1 and DEL as ⍰), and lone surrogates as U+FFFD:
 * a terminal escape sequence reads as its bytes, not as colour or a cleared screen.
 */
export function visibleControls(text: string): string {
  return text
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => {
      const code = c.charCodeAt(0);
      return code < 0x20 ? String.fromCharCode(0x2400 + code) : '\u2370';
    })
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

/** Agent text as HTML element content: controls made visible, then escaped. */
export function showText(text: string): string {
  return escapeHtml(visibleControls(text));
}

/** The first `max` characters of `text` and how many were left out (a surrogate pair is never split). */
export function clip(text: string, max: number): { shown: string; omitted: number } {
  if (text.length <= max) return { shown: text, omitted: 0 };
  const end = /[\ud800-\udbff]/.test(text[max - 1] ?? '') ? max - 1 : max;
  return { shown: text.slice(0, end), omitted: text.length - end };
}
