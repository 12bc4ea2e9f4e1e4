import { describe, expect, test } from 'vitest';
import { MAX_VALUE_LENGTH, Redactor } from '../../src/network/redact.js';

const none = { allowHeaders: [], redactHeaders: [], allowQueryParams: [], redactQueryParams: [] };
const redactor = new Redactor(none);

describe('Redactor.url', () => {
  test.each([
    ['https://a.test/p', 'https://a.test/p'],
    ['https://a.test/p?q=1&page=2', 'https://a.test/p?q=1&page=2'],
    ['https://a.test/p?access_token=x&q=1', 'https://a.test/p?access_token=[redacted]&q=1'],
    [
      'https://a.test/p?apiKey=x&API_KEY=y&api-key=z',
      'https://a.test/p?apiKey=[redacted]&API_KEY=[redacted]&api-key=[redacted]',
    ],
    ['https://a.test/p?key=x&keyboard=qwerty', 'https://a.test/p?key=[redacted]&keyboard=qwerty'],
    [
      'https://a.test/p?password=x&sig=y&Signature=z',
      'https://a.test/p?password=[redacted]&sig=[redacted]&Signature=[redacted]',
    ],
    ['https://a.test/p?api%5Fkey=x', 'https://a.test/p?api%5Fkey=[redacted]'],
    ['https://a.test/p?token', 'https://a.test/p?token'],
    ['https://a.test/p?token=', 'https://a.test/p?token=[redacted]'],
    ['https://a.test/cb#access_token=x&state=s', 'https://a.test/cb#access_token=[redacted]&state=s'],
    ['https://a.test/#/route?session=x&tab=2', 'https://a.test/#/route?session=[redacted]&tab=2'],
    ['https://a.test/p?token=x#section', 'https://a.test/p?token=[redacted]#section'],
    ['https://user:hunter2@a.test/p', 'https://user:[redacted]@a.test/p'],
    ['https://user@a.test/p?email=a@b.test', 'https://user@a.test/p?email=a@b.test'],
  ])('%s → %s', (input, expected) => {
    expect(redactor.url(input)).toBe(expected);
  });

  test('a data: URL keeps only its start, and any URL is cut at the length bound', () => {
    const data = `data:image/png;base64,${'A'.repeat(10_000)}`;
    expect(redactor.url(data).length).toBeLessThan(100);
    expect(redactor.url(data).startsWith('data:image/png;base64,')).toBe(true);
    const long = `https://a.test/${'p'.repeat(20_000)}`;
    expect(redactor.url(long)).toHaveLength(MAX_VALUE_LENGTH + 1);
  });

  test('a pattern with the global flag matches every time, not every other time', () => {
    const custom = new Redactor({ ...none, redactQueryParams: [/^q$/g] });
    expect(custom.url('https://a.test/?q=1')).toBe('https://a.test/?q=[redacted]');
    expect(custom.url('https://a.test/?q=2')).toBe('https://a.test/?q=[redacted]');
  });
});

describe('Redactor.headers', () => {
  test('lower-cases names, redacts credentials and URL values, keeps the rest', () => {
    expect(
      redactor.headers({
        Authorization: 'Bearer x',
        'Proxy-Authorization': 'Basic y',
        Cookie: 'a=b',
        'Set-Cookie': 'a=b\nc=d',
        'X-Api-Key': 'k',
        'X-Goog-Api-Key': 'k',
        'X-Auth-Token': 't',
        'X-CSRF-Token': 't',
        'X-Amz-Security-Token': 't',
        'X-Service-API-Key': 'k',
        Location: 'https://a.test/cb?code=c&x=1',
        Refresh: '0; url=/next?token=t',
        'Content-Type': 'text/html',
        'WWW-Authenticate': 'Basic realm="x"',
      }),
    ).toEqual({
      authorization: '[redacted]',
      'proxy-authorization': '[redacted]',
      cookie: '[redacted]',
      'set-cookie': '[redacted]',
      'x-api-key': '[redacted]',
      'x-goog-api-key': '[redacted]',
      'x-auth-token': '[redacted]',
      'x-csrf-token': '[redacted]',
      'x-amz-security-token': '[redacted]',
      'x-service-api-key': '[redacted]',
      location: 'https://a.test/cb?code=[redacted]&x=1',
      refresh: '0; url=/next?token=[redacted]',
      'content-type': 'text/html',
      'www-authenticate': 'Basic realm="x"',
    });
  });

  test('an allowed name is kept whatever it looks like; values and their number are bounded', () => {
    const custom = new Redactor({ ...none, allowHeaders: ['Cookie'] });
    expect(custom.headers({ cookie: 'a=b', authorization: 'x' })).toEqual({
      cookie: 'a=b',
      authorization: '[redacted]',
    });
    const many = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`x-h${i}`, 'v'.repeat(20_000)]));
    const kept = redactor.headers(many);
    expect(Object.keys(kept)).toHaveLength(200);
    expect(kept['x-h0']).toHaveLength(MAX_VALUE_LENGTH + 1);
  });
});
