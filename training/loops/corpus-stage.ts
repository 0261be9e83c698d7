/**
 * What a run takes from the NL2Bash corpus: the pairs left after near-duplicate removal,
 * the retriever over them (and over the training demonstrations), and the corpus as
 * imitation data — each pair a one-step transition whose candidates are its own command
 * and the adapted commands of its nearest other descriptions (leave-one-out), so the
 * network learns which command fits a description among commands that fit similar ones.
 */
import { ReplayBuffer } from '../buffer/replay-buffer.js';
import type { Transition } from '../buffer/types.js';
import { CommandRetriever } from '../corpus/command-retriever.js';
import { loadCorpus } from '../corpus/nl2bash-corpus.js';
import type { TextPair } from '../corpus/near-duplicates.js';
import type { DemoEpisode } from '../demos/demo-episode.js';
import type { CandidatesOf } from './behaviour-cloning.js';
import type { CorpusName } from '../../src/env/training-facts.js';


/** The corpus's pairs less the removed indices (near-duplicates of held-out tasks). */
export function corpusPairs(name: CorpusName | undefined, removed: readonly number[]): TextPair[] {
  if (name !== 'nl2bash') return [];
  const drop = new Set(removed);
  return loadCorpus().filter((_, i) => !drop.has(i));
}

/** The pairs a retriever searches: the corpus's, then each training demonstration's query with its first action. */
export function retrievalPairs(corpus: readonly TextPair[], demos: readonly DemoEpisode[]): TextPair[] {
  const fromDemos = demos.flatMap((d) => {
    const command = d.actions.find((a) => a !== 'submit');
    return command ? [{ description: d.query, command }] : [];
  });
  return [...corpus, ...fromDemos];
}

/** The corpus as imitation data in a replay buffer, with each pair's candidate list. */
export function corpusImitation(corpus: readonly TextPair[], retriever: CommandRetriever, perState: number): { buffer: ReplayBuffer; candidatesOf: CandidatesOf } {
  const buffer = new ReplayBuffer({ capacity: Math.max(1, corpus.length) });
  buffer.addMany(corpus.map((pair, i): Transition => ({
    episode: `corpus-${i}`,
    step: 0,
    env: 'corpus',
    taskId: `corpus-${i}`,
    query: pair.description,
    observation: pair.description,
    previousAction: '',
    action: pair.command,
    reward: 1,
    nextObservation: '',
    terminated: true,
    truncated: false,
    info: { doc: i },
  })));
  const lists = new Map<number, string[]>();
  const candidatesOf: CandidatesOf = (t) => {
    const doc = t.info.doc as number;
    let list = lists.get(doc);
    if (!list) {
      list = [...new Set([t.action, ...retriever.commandsFor(t.query, perState, { exclude: doc }), 'submit'])];
      lists.set(doc, list);
    }
    return list;
  };
  return { buffer, candidatesOf };
}
