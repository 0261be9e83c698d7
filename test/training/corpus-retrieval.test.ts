import { describe, expect, it } from 'vitest';
import { CommandRetriever } from '../../training/corpus/command-retriever.js';
import { commandTemplate, NearDuplicateFilter } from '../../training/corpus/near-duplicates.js';
import { loadCorpus } from '../../training/corpus/nl2bash-corpus.js';
import { Bm25Index } from '../../training/corpus/retrieval.js';
import { adaptCommand, querySlots } from '../../training/corpus/slot-filling.js';

describe('BM25 retrieval', () => {
  const index = new Bm25Index(['count the lines of every python file', 'delete empty directories', 'count the words in a file', 'list the python files modified today']);

  it('ranks the description sharing the rarest words first, and drops ones sharing none', () => {
    const hits = index.search('count lines of python files', 4);
    // doc 0 shares "count", "lines", "python"; doc 3 "python" and the rare "files"; doc 2 only "count"; doc 1 nothing.
    expect(hits.map((h) => h.doc)).toEqual([0, 3, 2]);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
    expect(index.search('remove empty folders', 4).map((h) => h.doc)).toEqual([1]);
  });

  it('skips excluded documents (leave-one-out)', () => {
    // Without doc 0: doc 2 shares "count" and "file", doc 3 only "python".
    expect(index.search('count the lines of every python file', 2, (doc) => doc === 0).map((h) => h.doc)).toEqual([2, 3]);
  });
});

describe('near-duplicate removal', () => {
  const heldOut = [{ description: 'Find all ".txt" files under /testbed/dir1 and count their lines', command: 'find /testbed/dir1 -name "*.txt" | xargs wc -l' }];
  const filter = new NearDuplicateFilter(heldOut);

  it('abstracts paths, numbers and globs in command templates', () => {
    expect(commandTemplate('find /testbed/dir1 -name "*.txt" -mtime +30 | xargs wc -l')).toEqual(['find', 'PATH', '-name', 'GLOB', '-mtime', 'NUM', '|', 'xargs', 'wc', '-l']);
  });

  it('removes a pair whose description is the same up to case and punctuation, or whose command differs only in paths and patterns', () => {
    expect(filter.reason({ description: 'find all .txt files under /testbed/dir1, and count their lines!', command: 'cat x' })).toBe('description');
    expect(filter.reason({ description: 'Show line counts of Java sources in the project', command: "find . -name '*.java' | xargs wc -l" })).toBe('command');
  });

  it('keeps pairs that only share a few words or a command name', () => {
    expect(filter.reason({ description: 'Count the lines of a file', command: 'wc -l notes.txt' })).toBeUndefined();
    expect(filter.reason({ description: 'Delete empty directories under the current directory', command: 'find . -type d -empty -delete' })).toBeUndefined();
  });

  it('counts removals by rule part', () => {
    const { kept, removed } = filter.filter([
      { description: 'Find all .txt files under /testbed/dir1 and count their lines', command: 'x' },
      { description: 'unrelated', command: 'find /tmp -name "*.py" | xargs wc -l' },
      { description: 'Print the date', command: 'date' },
    ]);
    expect(removed).toEqual({ description: 1, command: 1 });
    expect(kept.map((p) => p.command)).toEqual(['date']);
  });
});

describe('slot filling', () => {
  it('fills the path, extension, quoted string and day count the query names', () => {
    const slots = querySlots('Search all ".py" files under /testbed/dir2 modified in the last 3 days for "TODO"');
    expect(slots).toMatchObject({ paths: ['/testbed/dir2'], extensions: ['py'], quoted: ['TODO'], numbers: [{ value: '3', unit: 'days' }] });
    expect(adaptCommand(`find . -name '*.java' -mtime -7 | xargs grep "FIXME"`, slots)).toBe(`find /testbed/dir2 -name '*.py' -mtime -3 | xargs grep "TODO"`);
  });

  it('keeps system paths and what the query does not name', () => {
    const slots = querySlots('Show the size of /testbed');
    expect(adaptCommand('du -sh /var/log 2>/dev/null', slots)).toBe('du -sh /testbed 2>/dev/null');
    expect(adaptCommand('sort -u names.txt', querySlots('Print the unique lines'))).toBe('sort -u names.txt');
  });

  it('gives a file named in the query the full path an observation listed', () => {
    const slots = querySlots('Count the lines in notes.txt', '/testbed/dir1/notes.txt\n/testbed/dir2/other.txt');
    expect(slots.files).toEqual(['/testbed/dir1/notes.txt']);
    expect(adaptCommand('wc -l file.txt', slots)).toBe('wc -l /testbed/dir1/notes.txt');
  });

  it('reads "the NAME directory", relative paths and extensions named as words', () => {
    expect(querySlots('Count the lines of all php files in the testbed directory tree')).toMatchObject({ paths: ['/testbed'], extensions: ['php'] });
    expect(querySlots('Print unique paths under "testbed/dir1" compared to "testbed/dir2"').paths).toEqual(['/testbed/dir1', '/testbed/dir2']);
    // A written path wins over a named directory; "the current directory" names none.
    expect(querySlots('Copy the logs folder to /backup').paths).toEqual(['/backup']);
    expect(querySlots('List python files in the current directory')).toMatchObject({ paths: [], extensions: ['py'] });
    expect(adaptCommand("find . -name '*.java' | xargs wc -l", querySlots('Count the lines of all php files in the testbed directory tree'))).toBe("find /testbed -name '*.php' | xargs wc -l");
  });

  it('fills sizes with find\'s suffixes', () => {
    expect(adaptCommand('find /tmp -size +100k', querySlots('files in /testbed larger than 2 MB'))).toBe('find /testbed -size +2M');
  });
});

describe('retrieval over the shipped NL2Bash corpus', () => {
  const corpus = loadCorpus();

  it('loads all 12,607 pairs', () => {
    expect(corpus).toHaveLength(12_607);
    expect(corpus[0]).toEqual({ description: expect.stringContaining('Display process information twice'), command: expect.stringMatching(/^top /) });
  });

  it('retrieves an adapted command the corpus never held for a query', () => {
    const retriever = new CommandRetriever(corpus);
    const commands = retriever.commandsFor('Count the number of lines in all ".py" files under /testbed/dir1', 8);
    expect(commands.length).toBeGreaterThan(0);
    expect(commands.some((c) => c.includes('/testbed/dir1') && c.includes('*.py'))).toBe(true);
    const seen = new Set(corpus.map((p) => p.command));
    expect(commands.some((c) => !seen.has(c))).toBe(true);
  });
});
