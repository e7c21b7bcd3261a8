/**
 * The lobes library API. Modules are re-exported as they land; notebooks and scripts
 * import from 'lobes'.
 */
export * from './util/errors.js';
export { Rng } from './util/rng.js';
export * from './formats/safetensors.js';
export type * from './data/types.js';
export type * from './store/types.js';
export type * from './extract/types.js';
export type * from './wanda/types.js';
export type * from './cluster/types.js';
export { LOBES_VERSION } from './version.js';
