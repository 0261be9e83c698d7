import { describe, expect, it } from 'vitest';
import { sortsRows, withUnsortedGroups } from '../../envs/sql/mariadb/group-order.js';

describe('withUnsortedGroups (MySQL 8 group order on MariaDB)', () => {
  it('adds ORDER BY NULL after the grouping clauses of a block that groups without sorting', () => {
    expect(withUnsortedGroups('SELECT a, count(*) FROM t GROUP BY a')).toBe('SELECT a, count(*) FROM t GROUP BY a ORDER BY NULL');
    expect(withUnsortedGroups('select a from t group by a having count(*) > 1 limit 3;')).toBe('select a from t group by a having count(*) > 1 ORDER BY NULL limit 3;');
    expect(withUnsortedGroups('SELECT a FROM t GROUP BY a\n-- done')).toBe('SELECT a FROM t GROUP BY a ORDER BY NULL\n-- done');
  });

  it('reaches derived tables, CTEs, subqueries and parenthesised set members, and keeps an ORDER BY the block has', () => {
    expect(withUnsortedGroups('SELECT x FROM (SELECT a x FROM t GROUP BY a) d GROUP BY x ORDER BY x')).toBe(
      'SELECT x FROM (SELECT a x FROM t GROUP BY a ORDER BY NULL) d GROUP BY x ORDER BY x',
    );
    expect(withUnsortedGroups('WITH c AS (SELECT a, count(*) n FROM t GROUP BY a) SELECT * FROM c')).toBe(
      'WITH c AS (SELECT a, count(*) n FROM t GROUP BY a ORDER BY NULL) SELECT * FROM c',
    );
    expect(withUnsortedGroups('SELECT a FROM t WHERE b IN (SELECT c FROM u GROUP BY c HAVING count(*) > 1)')).toBe(
      'SELECT a FROM t WHERE b IN (SELECT c FROM u GROUP BY c HAVING count(*) > 1 ORDER BY NULL)',
    );
    expect(withUnsortedGroups('(SELECT a FROM t GROUP BY a) UNION (SELECT b FROM u GROUP BY b ORDER BY b)')).toBe(
      '(SELECT a FROM t GROUP BY a ORDER BY NULL) UNION (SELECT b FROM u GROUP BY b ORDER BY b)',
    );
    expect(withUnsortedGroups('SELECT a, group_concat(b ORDER BY b) FROM t GROUP BY a')).toBe('SELECT a, group_concat(b ORDER BY b) FROM t GROUP BY a ORDER BY NULL');
  });

  it('changes nothing it cannot place safely, nor text that only looks like GROUP BY', () => {
    expect(withUnsortedGroups('SELECT a FROM t GROUP BY a ORDER BY count(*) DESC')).toBeNull();
    expect(withUnsortedGroups('SELECT a FROM t GROUP BY a UNION SELECT b FROM u GROUP BY b')).toBeNull();
    expect(withUnsortedGroups('SELECT a FROM t GROUP BY a WITH ROLLUP')).toBeNull();
    expect(withUnsortedGroups("SELECT 'group by' FROM t")).toBeNull();
    expect(withUnsortedGroups('SELECT `group by` FROM t')).toBeNull();
    expect(withUnsortedGroups('SELECT a -- group by\nFROM t')).toBeNull();
    expect(withUnsortedGroups('SELECT a /* GROUP BY a */ FROM t')).toBeNull();
    expect(withUnsortedGroups('SELECT a FROM t /*!GROUP BY a */')).toBeNull();
    expect(withUnsortedGroups('INSERT INTO s SELECT a FROM t GROUP BY a')).toBeNull();
    expect(withUnsortedGroups('EXPLAIN SELECT a FROM t GROUP BY a')).toBeNull();
  });

  it('reads quoted text with escapes and doubled quotes as one token', () => {
    expect(withUnsortedGroups("SELECT a FROM t WHERE b = 'it''s (' GROUP BY a")).toBe("SELECT a FROM t WHERE b = 'it''s (' GROUP BY a ORDER BY NULL");
    expect(withUnsortedGroups('SELECT a FROM t WHERE b = "a \\" )" GROUP BY a')).toBe('SELECT a FROM t WHERE b = "a \\" )" GROUP BY a ORDER BY NULL');
    expect(withUnsortedGroups('SELECT a--1 FROM t GROUP BY a')).toBe('SELECT a--1 FROM t GROUP BY a ORDER BY NULL');
  });
});

describe('sortsRows (statements that may break ties)', () => {
  it('is true for a read with ORDER BY anywhere or a window, false otherwise', () => {
    expect(sortsRows('SELECT a FROM t GROUP BY a ORDER BY count(*) DESC LIMIT 1')).toBe(true);
    expect(sortsRows('SELECT a FROM t WHERE b = (SELECT c FROM u ORDER BY d LIMIT 1)')).toBe(true);
    expect(sortsRows('SELECT a, row_number() OVER (PARTITION BY b) FROM t')).toBe(true);
    expect(sortsRows('SELECT a, rank() OVER w FROM t WINDOW w AS (PARTITION BY b)')).toBe(true);
    expect(sortsRows('SELECT a, count(*) FROM t GROUP BY a')).toBe(false);
    expect(sortsRows("SELECT 'order by', overtime FROM t")).toBe(false);
    expect(sortsRows('UPDATE t SET a = 1 ORDER BY b LIMIT 1')).toBe(false);
  });
});
