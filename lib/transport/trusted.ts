/**
 * Trusted proxies ([throughway] trusted_proxies): the peers whose forwarding fields are believed. Read the
 * way nginx's real_ip module reads them (set_real_ip_from with real_ip_recursive on): the client address
 * is the right-most X-Forwarded-For entry that is not itself a trusted proxy. RFC 7239 §5.2 and §8.1: a
 * proxy's record is only as good as the proxy that wrote it, so only a trusted peer's fields are kept.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { parseSubnet, unmappedIp as plain } from '../config/convert';
import { sameLower } from './headers';

/**
 * The matcher of addresses and CIDR ranges (`10.0.0.0/8`, `2001:db8::/32`, `127.0.0.1`); null when the list
 * is empty. The configuration refuses any other entry with CONFIG_ADDRESS at its line (format 'cidr');
 * settings given in code that carry one throw a TypeError naming it.
 */
export function trustedMatcher(entries: readonly string[]): BlockList | null {
  if (entries.length === 0) return null;
  const list = new BlockList();
  for (const raw of entries) {
    const subnet = parseSubnet(raw);
    if (subnet === undefined) throw new TypeError(`trusted_proxies: "${raw}" is neither an IP address nor a CIDR range`);
    list.addSubnet(subnet.address, subnet.bits, subnet.family);
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
    if (sameLower(headers[i] as string, 'x-forwarded-for'))
      xff = xff === undefined ? (headers[i + 1] as string) : xff + ',' + (headers[i + 1] as string);
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
