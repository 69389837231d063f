/**
 * lib/transport/llhttp-wasm.ts takes exactly the pinned wasm build out of llhttp-wasm@1.0.3 and refuses
 * to start, saying why, when the installed file no longer has that shape.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { extractLlhttpWasm, LlhttpLoadError, PINNED_WASM_BYTES, readLlhttpWasm } from '../../lib/transport/llhttp-wasm';

const file = require.resolve('llhttp-wasm/out/index.js');
const source = readFileSync(file, 'latin1');

t.test('the installed package yields the pinned bytes', async (t) => {
  const bytes = readLlhttpWasm();
  t.equal(bytes.length, PINNED_WASM_BYTES);
  t.strictSame([...bytes.subarray(0, 4)], [0x00, 0x61, 0x73, 0x6d], 'wasm magic');
});

t.test('a wrapper without the base64 literal is refused with the reason', async (t) => {
  const changed = source.replace('binaryString =', 'wasmBase64 =');
  t.throws(() => extractLlhttpWasm(changed, file), LlhttpLoadError);
  t.throws(() => extractLlhttpWasm(changed, file), { message: /no longer holds the wasm module/ });
  t.throws(() => extractLlhttpWasm(changed, file), { code: 'ERR_LLHTTP_WASM_LOAD' });
});

t.test('a different wasm build is refused (the adapter reads llhttp_t fields directly)', async (t) => {
  const other = source.replace(/binaryString = "([A-Za-z0-9+/=]+)"/, (_m, b64: string) => {
    const bytes = Buffer.from(b64, 'base64');
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1;
    return `binaryString = "${bytes.toString('base64')}"`;
  });
  t.throws(() => extractLlhttpWasm(other, file), { message: /embeds a different wasm build .* sha256/ });
});
