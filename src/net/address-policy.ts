import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * Addresses the server must never fetch from on a caller's behalf (server-side request forgery):
 * the cloud instance-metadata services, refused even where private addresses are allowed, because no
 * media lives there and their answers hold credentials.
 */
const METADATA_ADDRESSES = [
  '169.254.169.254', // AWS, GCP, Azure, OpenStack, DigitalOcean …
  '169.254.170.2', // AWS ECS task metadata
  '100.100.100.200', // Alibaba Cloud
  'fd00:ec2::254', // AWS over IPv6
].map((text) => ipaddr.parse(text).toNormalizedString());

// Ranges reachable only inside an organisation's own network; allowed with MEDIA_FETCH_ALLOW_PRIVATE.
const PRIVATE_RANGES = new Set(['loopback', 'private', 'carrierGradeNat', 'linkLocal', 'uniqueLocal']);

const DESCRIPTIONS: Record<string, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  carrierGradeNat: 'a shared (carrier-grade NAT) address',
  linkLocal: 'a link-local address',
  uniqueLocal: 'a unique-local address',
  multicast: 'a multicast address',
  unspecified: 'an unspecified address',
  broadcast: 'a broadcast address',
  reserved: 'a reserved address',
};

// All public IPv6 unicast space is allocated from 2000::/3; the rest (including the deprecated
// IPv4-compatible ::a.b.c.d form, which some stacks still route to IPv4) is not a public host.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96') as [ipaddr.IPv6, number];

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

export interface AddressPolicyOptions {
  /** Allow loopback, private, carrier-grade NAT, link-local and unique-local addresses (tests, closed networks). */
  allowPrivate: boolean;
  /** Addresses or CIDR ranges allowed even though they are not public (never the metadata addresses). */
  allowedRanges: readonly string[];
}

/** Decides, after DNS resolution, whether the server may connect to an address to download media. */
export class AddressPolicy {
  private readonly allowedRanges: [Address, number][];

  constructor(private readonly options: AddressPolicyOptions) {
    this.allowedRanges = options.allowedRanges.map((range) =>
      range.includes('/')
        ? ipaddr.parseCIDR(range)
        : ([ipaddr.parse(range), ipaddr.parse(range).kind() === 'ipv4' ? 32 : 128] as [Address, number]),
    );
  }

  check(text: string): AddressVerdict {
    if (!ipaddr.isValid(text)) return { allowed: false, reason: `${text} is not an IP address` };
    const address = unwrap(ipaddr.parse(text));
    const shown = address.toString();
    if (METADATA_ADDRESSES.includes(address.toNormalizedString())) {
      return { allowed: false, reason: `${shown} is a cloud metadata address` };
    }
    if (this.allowedRanges.some(([base, bits]) => base.kind() === address.kind() && address.match(base, bits))) {
      return { allowed: true };
    }
    const range = address.range();
    if (range === 'unicast' && (address.kind() === 'ipv4' || address.match(GLOBAL_UNICAST_V6)))
      return { allowed: true };
    if (this.options.allowPrivate && PRIVATE_RANGES.has(range)) return { allowed: true };
    const description = DESCRIPTIONS[range] ?? `a special-purpose address (${range})`;
    return { allowed: false, reason: `${shown} is ${description}` };
  }
}

/**
 * The IPv4 address an IPv6 address stands for when it embeds one: IPv4-mapped (::ffff:a.b.c.d, which
 * the kernel connects to over IPv4) and well-known NAT64 (64:ff9b::a.b.c.d), so that e.g.
 * ::ffff:127.0.0.1 is judged as the loopback address it reaches.
 */
function unwrap(address: Address): Address {
  if (address.kind() !== 'ipv6') return address;
  const v6 = address as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address();
  if (v6.match(NAT64_WELL_KNOWN)) return new ipaddr.IPv4(v6.toByteArray().slice(12));
  return v6;
}
