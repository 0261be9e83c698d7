/** Re-implementations of Python library behaviour InterCode depends on. */
export { ShlexError, shlexSplit } from './shlex.js';
