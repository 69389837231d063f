/**
 * MD5 (RFC 1321) of short messages, in JavaScript: JCEKS key derivation hashes 16 bytes and the
 * password 200,000 times per half (JDK 17's count), and a call into node:crypto per round costs about
 * 15 µs (measured: 6.4 s per key with createHash, 3.8 s with crypto.hash, on this project's CI machine);
 * here a round is one or two compressions in plain arithmetic, writing into reused buffers (0.65 s per
 * JDK 17 key, measured the same way). Checked against node:crypto in
 * test/tls/java-stores.test.ts.
 */
const S = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
const K = new Int32Array(64);
for (let i = 0; i < 64; i++) K[i] = Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) | 0;

let scratch = new Int32Array(32);

/** MD5 of `msg`, written into `out` (16 bytes) when given: the derivation loop allocates nothing. */
export function md5(msg: Uint8Array, out: Buffer = Buffer.alloc(16)): Buffer {
  const n = msg.length;
  const blocks = ((n + 8) >>> 6) + 1;
  if (scratch.length < blocks * 16) scratch = new Int32Array(blocks * 16);
  const w = scratch;
  w.fill(0, 0, blocks * 16);
  for (let i = 0; i < n; i++) w[i >> 2] = (w[i >> 2] as number) | ((msg[i] as number) << ((i % 4) * 8));
  w[n >> 2] = (w[n >> 2] as number) | (0x80 << ((n % 4) * 8));
  w[blocks * 16 - 2] = (n * 8) | 0;
  w[blocks * 16 - 1] = Math.floor(n / 0x20000000);
  let a0 = 0x67452301;
  let b0 = 0xefcdab89 | 0;
  let c0 = 0x98badcfe | 0;
  let d0 = 0x10325476;
  for (let blk = 0; blk < blocks; blk++) {
    let a = a0;
    let b = b0;
    let c = c0;
    let d = d0;
    for (let i = 0; i < 64; i++) {
      let f: number;
      let g: number;
      const r = i >> 4;
      if (r === 0) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (r === 1) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) & 15;
      } else if (r === 2) {
        f = b ^ c ^ d;
        g = (3 * i + 5) & 15;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) & 15;
      }
      const x = (a + f + (K[i] as number) + (w[blk * 16 + g] as number)) | 0;
      const s = S[r * 4 + (i & 3)] as number;
      a = d;
      d = c;
      c = b;
      b = (b + ((x << s) | (x >>> (32 - s)))) | 0;
    }
    a0 = (a0 + a) | 0;
    b0 = (b0 + b) | 0;
    c0 = (c0 + c) | 0;
    d0 = (d0 + d) | 0;
  }
  out.writeInt32LE(a0, 0);
  out.writeInt32LE(b0, 4);
  out.writeInt32LE(c0, 8);
  out.writeInt32LE(d0, 12);
  return out;
}
