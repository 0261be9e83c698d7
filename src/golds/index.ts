export { GoldStore, defaultGoldCacheDir, type GoldKey, type GoldVerification, type StoredGold } from './gold-store.js';
export { GoldVerifier, type GoldRules, type GoldRun } from './gold-verifier.js';
