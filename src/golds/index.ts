export { GoldStore, defaultGoldCacheDir, type GoldKey, type GoldVerification, type StoredGold } from './gold-store.js';
