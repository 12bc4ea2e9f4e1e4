import { describe, expect, test } from 'vitest';
import { base32Decode, domainRule, hostAllowed, totp } from '../../src/local/vault.js';
import { totpAt } from '../support/login-site.js';

describe('TOTP (RFC 6238)', () => {
  // The test vectors of RFC 6238, appendix B: the ASCII seed "12345678901234567890" for SHA-1,
  // its 32- and 64-byte repetitions for SHA-256 and SHA-512, 8 digits.
  const seed = (bytes: number) => Buffer.from('1234567890'.repeat(7).slice(0, bytes));
  const base32 = (buffer: Buffer) => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
    const bits = [...buffer].map((b) => b.toString(2).padStart(8, '0')).join('');
    return (bits.match(/.{1,5}/g) ?? [])
      .map((chunk) => alphabet[Number.parseInt(chunk.padEnd(5, '0'), 2)])
      .join('');
  };
  const vectors: [number, string, string, string][] = [
    [59, '94287082', '46119246', '90693936'],
    [1111111109, '07081804', '68084774', '25091201'],
    [1111111111, '14050471', '67062674', '99943326'],
    [1234567890, '89005924', '91819424', '93441116'],
    [2000000000, '69279037', '90698825', '38618901'],
    [20000000000, '65353130', '77737706', '47863826'],
  ];

  test.each(vectors)(
    'at %i s gives the RFC codes for SHA-1, SHA-256 and SHA-512',
    (seconds, sha1, sha256, sha512) => {
      const atMs = seconds * 1000;
      expect(totp(base32(seed(20)), { atMs, digits: 8 })).toBe(sha1);
      expect(totp(base32(seed(32)), { atMs, digits: 8, algorithm: 'sha256' })).toBe(sha256);
      expect(totp(base32(seed(64)), { atMs, digits: 8, algorithm: 'sha512' })).toBe(sha512);
    },
  );

  test('six digits by default, as the login site of the tests computes them on its own', () => {
    for (const atMs of [0, 59_000, 1_111_111_109_000, Date.now()]) {
      expect(totp('JBSWY3DPEHPK3PXP', { atMs })).toBe(totpAt('JBSWY3DPEHPK3PXP', atMs));
    }
  });

  test('base32 decodes upper or lower case, with or without padding', () => {
    expect(base32Decode('MZXW6YQ=').toString()).toBe('foob');
    expect(base32Decode('mzxw6yq').toString()).toBe('foob');
    expect(() => base32Decode('MZ1W')).toThrow('not base32');
  });
});

describe('allowed hosts', () => {
  const bare = [domainRule('example.com')];
  const wildcard = [domainRule('*.example.com')];

  test('a bare host covers itself and its subdomains, in any case, with a trailing dot', () => {
    for (const host of [
      'example.com',
      'login.example.com',
      'a.b.example.com',
      'LOGIN.Example.com',
      'example.com.',
    ]) {
      expect(hostAllowed(host, bare), host).toBe(true);
    }
  });

  test('look-alike hosts are refused', () => {
    for (const host of [
      'notexample.com',
      'example.com.evil.test',
      'example.co',
      'evil-example.com',
      'com',
      '',
    ]) {
      expect(hostAllowed(host, bare), host).toBe(false);
    }
  });

  test('a *.domain pattern covers the subdomains only', () => {
    expect(hostAllowed('login.example.com', wildcard)).toBe(true);
    expect(hostAllowed('example.com', wildcard)).toBe(false);
    expect(hostAllowed('badexample.com', wildcard)).toBe(false);
  });
});
