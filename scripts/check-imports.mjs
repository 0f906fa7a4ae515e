#!/usr/bin/env node
// Keeps imports flowing one way (DESIGN.md §8):
//   core ← format ← {io, engine} ← catalog ← table ← {maintenance, config} ← server ← cli ← index.ts
// (the CLI starts the server: `twinlake serve` and `twinlake token`; the server never calls the CLI)
// A file may import from its own layer's folder and from lower layers, never from above or from
// a sibling layer. src/format must not import node built-ins that do I/O.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..', 'src');
const rank = { core: 0, format: 1, io: 2, engine: 2, catalog: 3, table: 4, maintenance: 5, config: 5, server: 6, cli: 6.5, 'index.ts': 7 };
const ioModules = /^(node:)?(fs|fs\/promises|net|http|https|child_process|os|dgram|worker_threads)$/;

function files(dir) {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const layerOf = (file) => relative(root, file).split('/')[0];
const problems = [];
for (const file of files(root)) {
  const layer = layerOf(file);
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/gm)) {
    const spec = m[1];
    if (spec.startsWith('.')) {
      const target = resolve(dirname(file), spec);
      if (!target.startsWith(root)) continue;
      const to = layerOf(target);
      if (to === layer) continue;
      if (!(rank[to] < rank[layer])) problems.push(`${relative(root, file)}: imports ${spec} (${layer} may not depend on ${to})`);
    } else if (layer === 'format' && ioModules.test(spec)) {
      problems.push(`${relative(root, file)}: src/format must stay pure but imports ${spec}`);
    }
  }
}
if (problems.length) {
  console.error(`import direction: ${problems.length} problem(s)\n` + problems.join('\n'));
  process.exit(1);
}
console.log('import direction: ok');
