// Preloaded into a CLI process by read-engine-output.test.ts: counts the bytes JavaScript hands
// to process.stdout and prints the count on stderr at exit, so a test can tell whether the rows
// went through JavaScript or the engine wrote them into the descriptor itself.
let bytes = 0;
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => {
  bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
  return write(chunk, ...rest);
};
process.on('exit', () => process.stderr.write(`\nstdout-bytes=${bytes}\n`));
