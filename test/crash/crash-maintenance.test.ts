import { describeLocalMatrix } from './local-matrix.ts';
import { MAINTENANCE_CASES } from './crash-cases.ts';

// Every maintenance operation, each dying at every storage call (crash-matrix.ts).
describeLocalMatrix('maintenance', MAINTENANCE_CASES);
