/**
 * IP addresses and ranges as the blocking conditions (spec 002, part 7: 900805) and the throttling
 * policies' `ip` / `ip_range` conditions (docs/throttling.md) write them: one address, a "start-end"
 * range or a CIDR block, IPv4 or IPv6. Pure functions: the key manager validates with them, the throttle
 * engine matches with them.
 */

/** IPv4-mapped IPv6 addresses (::ffff:a.b.c.d, what a dual-stack listener reports) as plain IPv4. */
export function plainIp(ip: string): string {
  return ip.startsWith('::ffff:') && ip.indexOf('.') > 0 ? ip.slice(7) : ip;
}

function ipv4(ip: string): number | undefined {
  const p = ip.split('.');
  if (p.length !== 4) return undefined;
  let n = 0;
  for (const s of p) {
    if (!/^\d{1,3}$/.test(s)) return undefined;
    const v = Number(s);
    if (v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

function ipv6(ip: string): bigint | undefined {
  if (!ip.includes(':') || !/^[0-9a-fA-F:]+$/.test(ip)) return undefined;
  const halves = ip.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] === '' ? [] : (halves[0] as string).split(':');
  const tail = halves.length === 2 ? (halves[1] === '' ? [] : (halves[1] as string).split(':')) : [];
  const fill = 8 - head.length - tail.length;
  if ((halves.length === 1 && fill !== 0) || fill < 0) return undefined;
  const groups = [...head, ...new Array<string>(halves.length === 2 ? fill : 0).fill('0'), ...tail];
  let n = 0n;
  for (const g of groups) {
    if (g.length === 0 || g.length > 4) return undefined;
    n = (n << 16n) | BigInt(parseInt(g, 16));
  }
  return n;
}

/** A numeric address: IPv4 as a number below 2^32, IPv6 as 2^32 + its value (so the families never overlap). */
export function ipNumber(ip: string): bigint | undefined {
  const plain = plainIp(ip);
  const v4 = ipv4(plain);
  if (v4 !== undefined) return BigInt(v4);
  const v6 = ipv6(plain);
  return v6 === undefined ? undefined : (1n << 32n) + v6;
}

/** [low, high] of an IP, a "start-end" range or a CIDR block; undefined when it is none of these. */
export function ipMatcher(type: 'ip' | 'ip_range', value: string): readonly [bigint, bigint] | undefined {
  const v = value.trim();
  if (type === 'ip') {
    const n = ipNumber(v);
    return n === undefined ? undefined : [n, n];
  }
  const slash = v.indexOf('/');
  if (slash > 0) {
    const base = ipNumber(v.slice(0, slash));
    const bits = Number(v.slice(slash + 1));
    if (base === undefined || !Number.isInteger(bits)) return undefined;
    const width = base < 1n << 32n ? 32 : 128;
    if (bits < 0 || bits > width) return undefined;
    const offset = width === 32 ? 0n : 1n << 32n;
    const size = 1n << BigInt(width - bits);
    const low = ((base - offset) / size) * size + offset;
    return [low, low + size - 1n];
  }
  const dash = v.indexOf('-');
  if (dash <= 0) return undefined;
  const a = ipNumber(v.slice(0, dash).trim());
  const b = ipNumber(v.slice(dash + 1).trim());
  if (a === undefined || b === undefined || a > b || a < 1n << 32n !== b < 1n << 32n) return undefined;
  return [a, b];
}
