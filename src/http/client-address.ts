import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { type BlockList, isIP } from 'node:net';
import type { Config } from '../config/config.ts';
import { keyDigest } from '../crypto/secrets.ts';

/**
 * Who is on the other end (spec §Authentication 14, §Limits):
 * - the connection's address;
 * - or, when the connection comes from a trusted proxy, the last X-Forwarded-For entry (one hop
 *   deep: the proxy appends the address it saw; anything left of it is the client's own claim);
 * - or, for a trusted caller presenting a valid X-Service-Caller-Key, the address it names in
 *   X-Service-Client-Address, counted in a bucket of its own.
 * IPv6 addresses are counted per /56, the block an end site usually gets.
 */
export interface ClientAddress {
  readonly address: string;
  readonly protocol: 'http' | 'https';
  /** The rate-limit bucket: `ip:<address or /56 prefix>` or `caller:<…>` for trusted callers. */
  readonly bucket: string;
}

export interface ConnectionFacts {
  readonly remoteAddress: string | undefined;
  readonly encrypted: boolean;
  readonly headers: IncomingHttpHeaders;
}

export function resolveClientAddress(connection: ConnectionFacts, network: Config['network']): ClientAddress {
  const peer = normalizeAddress(connection.remoteAddress ?? '') ?? '0.0.0.0';
  let address = peer;
  let protocol: 'http' | 'https' = connection.encrypted ? 'https' : 'http';
  if (isTrusted(network.trustedProxies, peer)) {
    const forwarded = normalizeAddress(lastEntry(connection.headers['x-forwarded-for']) ?? '');
    if (forwarded !== null) address = forwarded;
    const forwardedProto = lastEntry(connection.headers['x-forwarded-proto'])?.toLowerCase();
    if (forwardedProto === 'http' || forwardedProto === 'https') protocol = forwardedProto;
  }

  const callerKey = single(connection.headers['x-service-caller-key']);
  if (callerKey !== undefined && network.trustedCallerKeys.length > 0) {
    // Check every configured key, so the time taken does not tell which one nearly matched.
    const presented = keyDigest(callerKey);
    const matches = trustedKeyDigests(network.trustedCallerKeys).map((key) =>
      timingSafeEqual(presented, key),
    );
    const named = normalizeAddress(single(connection.headers['x-service-client-address']) ?? '');
    if (matches.includes(true) && named !== null) {
      return { address: named, protocol, bucket: `caller:${addressGroup(named)}` };
    }
  }
  return { address, protocol, bucket: `ip:${addressGroup(address)}` };
}

/**
 * The configured caller keys' SHA-256 digests, made once per configuration: a trusted caller
 * (a gateway) presents its key on every request. Comparing digests makes both sides the same
 * length, so the comparison's time says nothing about the key's length either.
 */
const callerKeyDigests = new WeakMap<readonly string[], readonly Buffer[]>();

function trustedKeyDigests(keys: readonly string[]): readonly Buffer[] {
  let digests = callerKeyDigests.get(keys);
  if (digests === undefined) {
    digests = keys.map(keyDigest);
    callerKeyDigests.set(keys, digests);
  }
  return digests;
}

function isTrusted(proxies: BlockList, address: string): boolean {
  return proxies.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function lastEntry(value: string | string[] | undefined): string | undefined {
  const joined = Array.isArray(value) ? value.join(',') : value;
  return joined
    ?.split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .at(-1);
}

/** A usable IP address in canonical text, IPv4-mapped IPv6 unwrapped; null when unusable. */
export function normalizeAddress(raw: string): string | null {
  let value = raw.trim();
  if (value.startsWith('[') && value.endsWith(']')) value = value.slice(1, -1);
  const zone = value.indexOf('%');
  if (zone !== -1) value = value.slice(0, zone);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(value);
  if (mapped?.[1] !== undefined) value = mapped[1];
  const family = isIP(value);
  if (family === 4) return value;
  if (family === 6)
    return expandIPv6(value)
      .map((group) => group.toString(16))
      .join(':');
  return null;
}

/** The bucket of an address: IPv4 as is; IPv6 by its /56 prefix. */
export function addressGroup(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = expandIPv6(address);
  const prefix = [groups[0], groups[1], groups[2], (groups[3] ?? 0) & 0xff00].map((group) =>
    (group ?? 0).toString(16),
  );
  return `${prefix.join(':')}::/56`;
}

function expandIPv6(address: string): number[] {
  let text = address;
  // An embedded IPv4 tail (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) becomes two groups.
  const ipv4Tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (ipv4Tail !== null) {
    const [a, b, c, d] = ipv4Tail.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, ipv4Tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - headGroups.length - tailGroups.length;
  const groups = [...headGroups, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...tailGroups];
  return groups.map((group) => Number.parseInt(group, 16));
}
