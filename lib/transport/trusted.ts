/**
 * Trusted proxies ([throughway] trusted_proxies): the peers whose forwarding fields are believed. Read the
 * way nginx's real_ip module reads them (set_real_ip_from with real_ip_recursive on): the client address
 * is the right-most X-Forwarded-For entry that is not itself a trusted proxy. RFC 7239 §5.2 and §8.1: a
 * proxy's record is only as good as the proxy that wrote it, so only a trusted peer's fields are kept.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';

/** IPv4-mapped IPv6 (::ffff:a.b.c.d, what a dual-stack listener reports) as plain IPv4. */
function plain(ip: string): string {
  return ip.length > 7 && ip.startsWith('::ffff:') && ip.indexOf('.') > 0 ? ip.slice(7) : ip;
}

/**
 * The matcher of addresses and CIDR ranges (`10.0.0.0/8`, `2001:db8::/32`, `127.0.0.1`); null when the list
 * is empty. Throws a TypeError naming the entry when one is neither.
 */
export function trustedMatcher(entries: readonly string[]): BlockList | null {
  if (entries.length === 0) return null;
  const list = new BlockList();
  for (const raw of entries) {
    const entry = raw.trim();
    const slash = entry.indexOf('/');
    const address = plain(slash < 0 ? entry : entry.slice(0, slash));
    const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined;
    const bits = slash < 0 ? (family === 'ipv4' ? 32 : 128) : Number(entry.slice(slash + 1));
    if (family === undefined || !Number.isInteger(bits) || bits < 0 || bits > (family === 'ipv4' ? 32 : 128) || (slash >= 0 && entry.slice(slash + 1).trim() === '')) {
      throw new TypeError(`trusted_proxies: "${raw}" is neither an IP address nor a CIDR range`);
    }
    list.addSubnet(address, bits, family);
  }
  return list;
}

export function isTrusted(list: BlockList | null, ip: string): boolean {
  if (list === null) return false;
  const a = plain(ip);
  if (isIPv4(a)) return list.check(a, 'ipv4');
  return isIPv6(a) && list.check(a, 'ipv6');
}

/**
 * The client address behind a trusted peer: walking X-Forwarded-For from the right, the first entry that
 * is not a trusted proxy (real_ip_recursive); the left-most when all are trusted; the peer when the field
 * is absent or an entry is not an address (a forged or garbled list believes nothing further left).
 */
export function clientAddress(list: BlockList | null, headers: readonly string[], peer: string): string {
  let xff: string | undefined;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (name.length === 15 && name.toLowerCase() === 'x-forwarded-for') xff = xff === undefined ? (headers[i + 1] as string) : xff + ',' + (headers[i + 1] as string);
  }
  if (xff === undefined) return peer;
  const entries = xff.split(',');
  let client = peer;
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = (entries[i] as string).trim();
    if (!isIPv4(plain(e)) && !isIPv6(e)) return client;
    client = e;
    if (!isTrusted(list, e)) return e;
  }
  return client;
}
