// A process that runs one operation of the crash matrix and kills itself (SIGKILL: no cleanup, no
// buffered write finished) at its storage call k; with `landed`, just after that call took effect.
import { CrashPoint } from '../crash/crash-point.ts';
import { openLake } from '../crash/crash-lake.ts';
import { ALL_CASES, restoreCaseInputs } from '../crash/crash-cases.ts';

const [warehouse, dbPath, name, k, landed, inputs] = process.argv.slice(2);
const c = ALL_CASES.find((x) => x.name === name);
if (!c) throw new Error(`no crash case ${name}`);
restoreCaseInputs(warehouse!, JSON.parse(inputs!));
const point = new CrashPoint();
point.onCrash = () => process.kill(process.pid, 'SIGKILL');
const { lake } = await openLake({ warehouse: warehouse!, dbPath: dbPath! }, point);
point.arm(Number(k), landed === 'landed');
await c.run(lake).catch(() => undefined);
process.stderr.write(`the operation ended without reaching call ${k}\n`);
process.exit(3);
