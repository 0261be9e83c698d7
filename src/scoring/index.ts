/** Scoring primitives that reproduce InterCode's Python reward arithmetic bit for bit. */
export { EmptyVocabularyError, answerSimilarity, tfidfCosine, tfidfTokens } from './tfidf.js';
export { erf } from './erf.js';
export { pyRound } from './pyround.js';
export { isSolved, SOLVED_REWARD } from './solved.js';
