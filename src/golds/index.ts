export { GoldStore, defaultGoldCacheDir, type GoldKey, type StoredGold } from './gold-store.js';
