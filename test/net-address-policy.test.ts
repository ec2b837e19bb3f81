import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { AddressPolicy } from '../src/net/address-policy.js';
import { openRemote } from '../src/net/remote-fetch.js';
import { png } from './support/media-samples.js';

const strict = new AddressPolicy({ allowPrivate: false, allowedRanges: [] });
const closedNetwork = new AddressPolicy({ allowPrivate: true, allowedRanges: [] });

describe('address policy', () => {
  it('allows public addresses only, by default', () => {
    for (const address of [
      '93.184.215.14',
      '8.8.8.8',
      '2606:4700:4700::1111',
      '2a00:1450:4001:80b::200e',
      '::ffff:8.8.8.8',
      '64:ff9b::808:808',
    ]) {
      expect(strict.check(address), address).toEqual({ allowed: true });
    }
    const refused: [string, string][] = [
      ['127.0.0.1', '127.0.0.1 is a loopback address'],
      ['127.255.0.9', '127.255.0.9 is a loopback address'],
      ['10.0.0.1', '10.0.0.1 is a private address'],
      ['172.31.255.255', '172.31.255.255 is a private address'],
      ['192.168.0.10', '192.168.0.10 is a private address'],
      ['100.64.0.1', '100.64.0.1 is a shared (carrier-grade NAT) address'],
      ['100.127.255.254', '100.127.255.254 is a shared (carrier-grade NAT) address'],
      ['169.254.0.1', '169.254.0.1 is a link-local address'],
      ['169.254.169.254', '169.254.169.254 is a cloud metadata address'],
      ['0.0.0.0', '0.0.0.0 is an unspecified address'],
      ['255.255.255.255', '255.255.255.255 is a broadcast address'],
      ['239.1.2.3', '239.1.2.3 is a multicast address'],
      ['240.0.0.1', '240.0.0.1 is a reserved address'],
      ['::1', '::1 is a loopback address'],
      ['::', ':: is an unspecified address'],
      ['fe80::1', 'fe80::1 is a link-local address'],
      ['fc00::1', 'fc00::1 is a unique-local address'],
      ['fd00:ec2::254', 'fd00:ec2::254 is a cloud metadata address'],
      ['ff02::1', 'ff02::1 is a multicast address'],
      // IPv6 forms that reach IPv4 addresses are judged by the IPv4 address.
      ['::ffff:127.0.0.1', '127.0.0.1 is a loopback address'],
      ['::ffff:7f00:1', '127.0.0.1 is a loopback address'],
      ['::ffff:169.254.169.254', '169.254.169.254 is a cloud metadata address'],
      ['::ffff:192.168.1.1', '192.168.1.1 is a private address'],
      ['64:ff9b::a00:1', '10.0.0.1 is a private address'],
      // Outside IPv6 global unicast, including the deprecated IPv4-compatible form.
      ['::7f00:1', '::7f00:1 is a special-purpose address (unicast)'],
      ['2002:7f00:1::1', '2002:7f00:1::1 is a special-purpose address (6to4)'],
    ];
    for (const [address, reason] of refused) expect(strict.check(address), address).toEqual({ allowed: false, reason });
    expect(strict.check('localhost')).toEqual({ allowed: false, reason: 'localhost is not an IP address' });
  });

  it('allows private ranges on a closed network, never the metadata services', () => {
    for (const address of [
      '127.0.0.1',
      '::1',
      '10.1.2.3',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.1.1',
      'fd12::1',
      'fe80::1',
      '::ffff:127.0.0.1',
    ]) {
      expect(closedNetwork.check(address), address).toEqual({ allowed: true });
    }
    for (const address of [
      '169.254.169.254',
      '169.254.170.2',
      '100.100.100.200',
      'fd00:ec2::254',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
    ]) {
      expect(closedNetwork.check(address).allowed, address).toBe(false);
    }
  });

  it('allows listed addresses and ranges only', () => {
    const listed = new AddressPolicy({
      allowPrivate: false,
      allowedRanges: ['10.8.0.0/16', '127.0.0.2', 'fd00:1::/32', '169.254.169.254'],
    });
    expect(listed.check('10.8.200.1').allowed).toBe(true);
    expect(listed.check('10.9.0.1').allowed).toBe(false);
    expect(listed.check('127.0.0.2').allowed).toBe(true);
    expect(listed.check('127.0.0.1').allowed).toBe(false);
    expect(listed.check('fd00:1:ffff::1').allowed).toBe(true);
    expect(listed.check('169.254.169.254').allowed).toBe(false);
  });
});

describe('opening a remote URL', () => {
  it('connects to the address it checked, without a second lookup of the host name', async () => {
    const hosts: string[] = [];
    const server = http.createServer((req, res) => {
      hosts.push(req.headers.host ?? '');
      if (req.url === '/start') res.writeHead(302, { Location: '/logo.png' }).end();
      else res.end(png());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    const { port } = server.address() as AddressInfo;
    const lookups: string[] = [];
    try {
      // `media.example.test` exists in no DNS: only the injected resolver can answer it.
      const remote = await openRemote(`http://media.example.test:${port}/start`, {
        policy: new AddressPolicy({ allowPrivate: false, allowedRanges: ['127.0.0.2'] }),
        idleTimeoutMs: 2000,
        maxRedirects: 5,
        signal: new AbortController().signal,
        resolve: (hostname) => {
          lookups.push(hostname);
          return Promise.resolve(['127.0.0.2']);
        },
      });
      const chunks: Buffer[] = [];
      for await (const chunk of remote.body) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).equals(png())).toBe(true);
      expect(remote.url.href).toBe(`http://media.example.test:${port}/logo.png`);
      expect(lookups).toEqual(['media.example.test', 'media.example.test']); // once per hop
      expect(hosts).toEqual([`media.example.test:${port}`, `media.example.test:${port}`]);
    } finally {
      server.close();
    }
  });

  it('refuses a host name when any of its addresses is refused (DNS rebinding, split answers)', async () => {
    const attempt = openRemote('http://rebind.example.test/logo.png', {
      policy: new AddressPolicy({ allowPrivate: false, allowedRanges: [] }),
      idleTimeoutMs: 1000,
      maxRedirects: 5,
      signal: new AbortController().signal,
      resolve: () => Promise.resolve(['93.184.215.14', '127.0.0.1']),
    });
    await expect(attempt).rejects.toMatchObject({
      status: 422,
      details: [{ path: 'url', message: '127.0.0.1 is a loopback address (rebind.example.test)' }],
    });
  });
});
