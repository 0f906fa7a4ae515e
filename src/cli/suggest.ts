// The rule lives with the config keys it suggests (the library's config layer uses it too).
export { nearest } from '../config/nearest.ts';
