/**
 * Which statements provably leave a session as they found it. A session that ran only such
 * statements on fixed data behaves like a fresh one on the same database, so a reset can
 * keep it and a cached gold result stands for running the gold in it. Conservative: a
 * statement not recognised here counts as changing the session.
 */

/** Leading white space and comments (not MySQL's executable `/*! … *\/` comments). */
const LEADING_NOISE = /^(?:\s+|--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$)|\/\*(?!!)[\s\S]*?\*\/)*/;
const READ_VERB = /^\(*\s*(?:select|show|describe|desc|explain|with)\b/i;
/**
 * User variables, SELECT … INTO, locks (LOCK IN SHARE MODE, FOR UPDATE, GET_LOCK and the
 * other user-lock functions), sequences, and functions whose value depends on earlier
 * statements. Matched anywhere (`_` is a word character, so `\block\b` alone missed GET_LOCK).
 */
const SESSION_TOUCH =
  /@|\binto\b|lock|\bfor\s+update\b|last_insert_id|found_rows|row_count|sql_calc_found_rows|nextval|setval|lastval|\b(?:next|previous)\s+value\s+for\b|\/\*!/i;
/** Functions whose value differs from one run to the next. */
const NON_DETERMINISTIC = /\b(?:rand|uuid|uuid_short|now|sysdate|curdate|curtime|current_date|current_time|current_timestamp|localtime|localtimestamp|unix_timestamp|utc_date|utc_time|utc_timestamp|connection_id|database|schema|user|current_user|session_user|system_user|sleep|benchmark|random)\b/i;

/** True when `sql` is one read (SELECT, SHOW, DESCRIBE, EXPLAIN, WITH) that cannot change the session. */
export function isSessionNeutral(sql: string): boolean {
  const body = sql.replace(LEADING_NOISE, '');
  return READ_VERB.test(body) && !SESSION_TOUCH.test(body);
}

/** True when `sql` is session-neutral and gives the same rows on the same data every time. */
export function isRepeatableRead(sql: string): boolean {
  return isSessionNeutral(sql) && !NON_DETERMINISTIC.test(sql);
}
