import { describeLocalMatrix } from './local-matrix.ts';
import { REST_CASE, WRITE_CASES } from './crash-cases.ts';

// Writes, merges, deletes, creation, Delta-only writes, sync, register and a REST commit, each
// dying at every storage call (crash-matrix.ts).
describeLocalMatrix('writes', [...WRITE_CASES, REST_CASE]);
