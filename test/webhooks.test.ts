import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  ConfigurationError,
  verifyWebhook,
  type WebhookHeaders,
  WebhookVerificationError,
} from 'cloudbrowser';
import { describe, expect, it } from 'vitest';

/** The two real vectors of the shared test data, copied verbatim. */
const VECTORS = JSON.parse(
  readFileSync(new URL('./fixtures/webhook-vectors.json', import.meta.url), 'utf8'),
) as {
  secret: string;
  vectors: { name: string; body: string; timestamp: string; signature: string }[];
};
const SECRET = 'whsec_test_0123456789';
const TS = 1_788_955_200;
const AT = new Date(TS * 1000);

/** The signature over a canonical form written out by hand: the oracle these tests check against. */
function sign(canonical: string, timestamp: number | string = TS, secret = SECRET): string {
  return createHmac('sha256', secret).update(`${timestamp}.${canonical}`, 'utf8').digest('hex');
}

function headers(signature: string, timestamp: number | string = TS): Record<string, string> {
  return { 'x-service-signature': signature, 'x-service-timestamp': String(timestamp) };
}

function verify(
  rawBody: string | Uint8Array,
  init: { signature: string; timestamp?: number | string; now?: Date },
) {
  return verifyWebhook({
    rawBody,
    headers: headers(init.signature, init.timestamp),
    secret: SECRET,
    now: init.now ?? AT,
  });
}

function refusal(run: () => unknown): WebhookVerificationError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return error as WebhookVerificationError;
  }
  throw new Error('expected the delivery to be refused');
}

const ENVELOPE =
  '{"payload":{"session_id":"s-1","status":"idle"},"timestamp":"2026-09-09T12:00:00Z","type":"session.status.update"}';

describe('verifyWebhook with the shared vectors', () => {
  it.each(VECTORS.vectors)('accepts the $name vector and returns its typed event', (vector) => {
    const event = verifyWebhook({
      rawBody: vector.body,
      headers: { 'X-Service-Signature': vector.signature, 'X-Service-Timestamp': vector.timestamp },
      secret: VECTORS.secret,
      now: new Date(Number(vector.timestamp) * 1000),
    });
    expect(event).toEqual({
      type: 'session.status.update',
      timestamp: '2026-09-09T12:00:00Z',
      payload: JSON.parse(vector.body).payload,
    });
  });

  it('accepts the vectors given as bytes, as a raw body parser hands them over', () => {
    for (const vector of VECTORS.vectors) {
      const event = verifyWebhook({
        rawBody: Buffer.from(vector.body, 'utf8'),
        headers: { 'x-service-signature': vector.signature, 'x-service-timestamp': vector.timestamp },
        secret: VECTORS.secret,
        now: new Date(Number(vector.timestamp) * 1000),
      });
      expect(event.type).toBe('session.status.update');
    }
  });

  it.each(VECTORS.vectors)('refuses the $name vector with its body tampered with', (vector) => {
    const error = refusal(() =>
      verifyWebhook({
        rawBody: vector.body.replace('synthetic-session', 'synthetic-sessioN'),
        headers: { 'x-service-signature': vector.signature, 'x-service-timestamp': vector.timestamp },
        secret: VECTORS.secret,
        now: new Date(Number(vector.timestamp) * 1000),
      }),
    );
    expect(error.code).toBe('bad_signature');
  });

  it('refuses a vector with one signature digit changed, or under another secret', () => {
    const [vector] = VECTORS.vectors;
    if (!vector) throw new Error('no vector');
    const flipped = `${vector.signature.slice(0, -1)}${vector.signature.endsWith('0') ? '1' : '0'}`;
    for (const [signature, secret] of [
      [flipped, VECTORS.secret],
      [vector.signature, `${VECTORS.secret}x`],
    ] as const) {
      const error = refusal(() =>
        verifyWebhook({
          rawBody: vector.body,
          headers: { 'x-service-signature': signature, 'x-service-timestamp': vector.timestamp },
          secret,
          now: new Date(Number(vector.timestamp) * 1000),
        }),
      );
      expect(error.code).toBe('bad_signature');
    }
  });

  it('refuses a vector whose timestamp header was changed, even within the tolerance', () => {
    const [vector] = VECTORS.vectors;
    if (!vector) throw new Error('no vector');
    const error = refusal(() =>
      verifyWebhook({
        rawBody: vector.body,
        headers: {
          'x-service-signature': vector.signature,
          'x-service-timestamp': String(Number(vector.timestamp) + 1),
        },
        secret: VECTORS.secret,
        now: new Date(Number(vector.timestamp) * 1000),
      }),
    );
    expect(error.code).toBe('bad_signature');
  });
});

describe('canonical form', () => {
  it('sorts keys by code point: U+E000 before U+10000, the empty key first, integer-like keys as strings', () => {
    const raw =
      '{"type":"t","timestamp":"x","payload":{"\\ud800\\udc00":1,"\ue000":2,"z":3,"9":4,"10":5,"":6,"a":7,"Z":8}}';
    const canonical =
      '{"payload":{"":6,"10":5,"9":4,"Z":8,"a":7,"z":3,"\\ue000":2,"\\ud800\\udc00":1},"timestamp":"x","type":"t"}';
    expect(verify(raw, { signature: sign(canonical) }).payload).toMatchObject({ '10': 5, '': 6 });
    // UTF-16 order would put the astral key first; that form must not verify.
    const utf16Order =
      '{"payload":{"":6,"10":5,"9":4,"Z":8,"a":7,"z":3,"\\ud800\\udc00":1,"\\ue000":2},"timestamp":"x","type":"t"}';
    expect(refusal(() => verify(raw, { signature: sign(utf16Order) })).code).toBe('bad_signature');
  });

  it('sorts keys that share a prefix, shorter first, and sorts nested objects inside arrays', () => {
    const raw =
      '{"type":"t","timestamp":"x","payload":{"ab":1,"a":2,"list":[{"y":1,"x":2},{"b":[],"a":{}}]}}';
    const canonical =
      '{"payload":{"a":2,"ab":1,"list":[{"x":2,"y":1},{"a":{},"b":[]}]},"timestamp":"x","type":"t"}';
    expect(verify(raw, { signature: sign(canonical) }).payload.list).toEqual([
      { y: 1, x: 2 },
      { b: [], a: {} },
    ]);
  });

  it('keeps numbers exactly as written: 1.0, 1e5, 1E+05, -0, 0.10 and digits beyond a double', () => {
    const raw =
      '{"type":"t","timestamp":"x","payload":{"n":[1.0,1e5,1E+05,-0,0.10,123456789012345678901234567890,-2.5e-3]}}';
    const canonical =
      '{"payload":{"n":[1.0,1e5,1E+05,-0,0.10,123456789012345678901234567890,-2.5e-3]},"timestamp":"x","type":"t"}';
    const event = verify(raw, { signature: sign(canonical) });
    expect(event.payload.n).toEqual([1, 100000, 100000, -0, 0.1, 1.2345678901234568e29, -0.0025]);
    // What JSON.parse + JSON.stringify would sign instead must not verify.
    const reserialised =
      '{"payload":{"n":[1,100000,100000,0,0.1,1.2345678901234568e+29,-0.0025]},"timestamp":"x","type":"t"}';
    expect(refusal(() => verify(raw, { signature: sign(reserialised) })).code).toBe('bad_signature');
  });

  it('escapes every non-ASCII character as lower-case \\uXXXX, with surrogate pairs above U+FFFF', () => {
    const text = 'Gr\u00fc\u00dfe \u{1f389} e\u0301\u007f';
    const raw = `{"type":"t","timestamp":"x","payload":{"text":"${text}","esc":"\\u00FCber"}}`;
    const canonical =
      '{"payload":{"esc":"\\u00fcber","text":"Gr\\u00fc\\u00dfe \\ud83c\\udf89 e\\u0301\\u007f"},"timestamp":"x","type":"t"}';
    expect(verify(raw, { signature: sign(canonical) }).payload).toEqual({ text, esc: '\u00fcber' });
  });

  it('writes the short escapes of JSON and \\u00XX for other control characters, and unescapes \\/', () => {
    const raw = '{"type":"t","timestamp":"x","payload":{"s":"q\\"b\\\\n\\nt\\tr\\rb\\bf\\f\\u0001\\/"}}';
    const canonical = '{"payload":{"s":"q\\"b\\\\n\\nt\\tr\\rb\\bf\\f\\u0001/"},"timestamp":"x","type":"t"}';
    expect(verify(raw, { signature: sign(canonical) }).payload.s).toBe('q"b\\n\nt\tr\rb\bf\f\u0001/');
  });

  it('ignores whitespace between tokens, whatever kind', () => {
    const compact = '{"type":"t","timestamp":"x","payload":{"a":[1,true,null,false],"b":"c d"}}';
    const canonical = '{"payload":{"a":[1,true,null,false],"b":"c d"},"timestamp":"x","type":"t"}';
    const spaced =
      ' \r\n{ "type" :\t"t" ,\n"timestamp": "x",\r\n  "payload" : { "a" : [ 1 , true,null ,false ] , "b":"c d" } }\n';
    for (const raw of [compact, spaced]) {
      expect(verify(raw, { signature: sign(canonical) }).type).toBe('t');
    }
  });

  it('keeps a "__proto__" key as a key of the payload, not as its prototype', () => {
    const raw = '{"type":"t","timestamp":"x","payload":{"__proto__":{"polluted":true}}}';
    const canonical = '{"payload":{"__proto__":{"polluted":true}},"timestamp":"x","type":"t"}';
    const { payload } = verify(raw, { signature: sign(canonical) });
    expect(Object.getPrototypeOf(payload)).toBe(Object.prototype);
    expect(Object.keys(payload)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('malformed bodies', () => {
  it.each([
    ['a repeated key', '{"type":"t","timestamp":"x","payload":{"a":1,"a":2}}', 'repeated'],
    [
      'a key repeated under another spelling',
      '{"type":"t","timestamp":"x","payload":{"a":1,"\\u0061":2}}',
      'repeated',
    ],
    ['not JSON', 'type=t', 'not valid JSON'],
    ['a trailing comma', '{"type":"t","timestamp":"x","payload":{},}', 'not valid JSON'],
    ['text after the value', '{"type":"t","timestamp":"x","payload":{}} {}', 'after the value'],
    ['single quotes', "{'type':'t'}", 'not valid JSON'],
    ['a leading zero', '{"type":"t","timestamp":"x","payload":{"n":01}}', 'not valid JSON'],
    ['NaN', '{"type":"t","timestamp":"x","payload":{"n":NaN}}', 'not valid JSON'],
    ['a raw newline in a string', '{"type":"t\n","timestamp":"x","payload":{}}', 'control character'],
    ['a bad escape', '{"type":"\\x41","timestamp":"x","payload":{}}', 'bad escape'],
    ['a byte order mark', '\ufeff{"type":"t","timestamp":"x","payload":{}}', 'not valid JSON'],
    ['an empty body', '', 'not valid JSON'],
  ])('%s is malformed_body', (_name, raw, why) => {
    const error = refusal(() => verify(raw, { signature: sign(raw) }));
    expect(error.code).toBe('malformed_body');
    expect(error.message).toContain(why);
  });

  it('bytes that are not UTF-8 are malformed_body', () => {
    const error = refusal(() => verify(Buffer.from([0x7b, 0xff, 0x7d]), { signature: sign('{}') }));
    expect(error).toMatchObject({
      code: 'malformed_body',
      message: 'verifyWebhook: the body is not valid UTF-8',
    });
  });

  it('a parsed object instead of the raw body is refused with a message that says why', () => {
    const error = refusal(() => verify({ type: 't' } as unknown as string, { signature: sign('{}') }));
    expect(error.code).toBe('malformed_body');
    expect(error.message).toContain('a parsed object cannot be verified');
  });

  it.each([
    ['an array', '[1,2]', '[1,2]'],
    ['an envelope without payload', '{"type":"t","timestamp":"x"}', '{"timestamp":"x","type":"t"}'],
    [
      'a type that is not a string',
      '{"type":1,"timestamp":"x","payload":{}}',
      '{"payload":{},"timestamp":"x","type":1}',
    ],
  ])('a correctly signed body that is %s is malformed_body', (_what, raw, canonical) => {
    expect(refusal(() => verify(raw, { signature: sign(canonical) })).code).toBe('malformed_body');
  });

  it('nesting deeper than the limit is malformed_body, not a stack overflow', () => {
    const raw = `{"type":"t","timestamp":"x","payload":{"d":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`;
    expect(refusal(() => verify(raw, { signature: sign(raw) })).code).toBe('malformed_body');
  });
});

describe('headers and signatures', () => {
  it('missing headers are missing_signature and missing_timestamp; an empty one counts as missing', () => {
    const signature = sign(ENVELOPE);
    const run = (h: Record<string, string>) => () =>
      verifyWebhook({ rawBody: ENVELOPE, headers: h, secret: SECRET, now: AT });
    expect(refusal(run({ 'x-service-timestamp': String(TS) })).code).toBe('missing_signature');
    expect(refusal(run({ 'x-service-signature': signature })).code).toBe('missing_timestamp');
    expect(refusal(run({ 'x-service-signature': ' ', 'x-service-timestamp': String(TS) })).code).toBe(
      'missing_signature',
    );
  });

  it('reads header names in any case, from a plain object or a fetch Headers', () => {
    const signature = sign(ENVELOPE);
    const shapes: WebhookHeaders[] = [
      { 'X-SERVICE-SIGNATURE': signature, 'X-Service-Timestamp': String(TS) },
      new Headers({ 'x-service-signature': signature, 'x-service-timestamp': String(TS) }),
      { 'x-service-signature': [signature], 'x-service-timestamp': String(TS) },
    ];
    for (const h of shapes) {
      expect(verifyWebhook({ rawBody: ENVELOPE, headers: h, secret: SECRET, now: AT }).type).toBe(
        'session.status.update',
      );
    }
  });

  it('takes other header names when configured', () => {
    const event = verifyWebhook({
      rawBody: ENVELOPE,
      headers: { 'webhook-signature': sign(ENVELOPE), 'Webhook-Timestamp': String(TS) },
      secret: SECRET,
      now: AT,
      signatureHeader: 'Webhook-Signature',
      timestampHeader: 'webhook-timestamp',
    });
    expect(event.payload.status).toBe('idle');
  });

  it('a signature header sent twice is refused', () => {
    const signature = sign(ENVELOPE);
    const error = refusal(() =>
      verifyWebhook({
        rawBody: ENVELOPE,
        headers: { 'x-service-signature': [signature, signature], 'x-service-timestamp': String(TS) },
        secret: SECRET,
        now: AT,
      }),
    );
    expect(error.code).toBe('malformed_signature');
  });

  it.each([
    ['not hex', 'z'.repeat(64)],
    ['with a scheme prefix', `sha256=${'a'.repeat(64)}`],
    ['base64', Buffer.alloc(32, 7).toString('base64')],
  ])('a signature that is %s is malformed_signature', (_what, signature) => {
    expect(refusal(() => verify(ENVELOPE, { signature })).code).toBe('malformed_signature');
  });

  it('a signature of another length is bad_signature, compared without a shortcut', () => {
    const signature = sign(ENVELOPE);
    for (const wrong of [
      signature.slice(0, 63),
      signature.slice(0, 2),
      `${signature}0`,
      `${signature}${signature}`,
    ]) {
      expect(refusal(() => verify(ENVELOPE, { signature: wrong })).code).toBe('bad_signature');
    }
  });

  it('accepts the signature in upper case too', () => {
    expect(verify(ENVELOPE, { signature: sign(ENVELOPE).toUpperCase() }).type).toBe('session.status.update');
  });

  it('tries each secret while one is rotated', () => {
    const event = verifyWebhook({
      rawBody: ENVELOPE,
      headers: headers(sign(ENVELOPE, TS, 'new-secret')),
      secret: ['old-secret', 'new-secret'],
      now: AT,
    });
    expect(event.type).toBe('session.status.update');
  });

  it('never puts the secret or the expected signature in a message', () => {
    const expected = sign(ENVELOPE);
    const error = refusal(() => verify(ENVELOPE, { signature: 'ab'.repeat(32) }));
    expect(error.message).not.toContain(SECRET);
    expect(error.message).not.toContain(expected);
    expect(error.message).toBe(
      'verifyWebhook: the X-Service-Signature header does not match the body and timestamp',
    );
  });

  it('refuses an empty secret as a configuration error', () => {
    expect(() => verifyWebhook({ rawBody: ENVELOPE, headers: headers('ab'), secret: '' })).toThrow(
      ConfigurationError,
    );
    expect(() => verifyWebhook({ rawBody: ENVELOPE, headers: headers('ab'), secret: [] })).toThrow(
      ConfigurationError,
    );
  });
});

describe('timestamps', () => {
  const at = (offsetSec: number) => new Date((TS + offsetSec) * 1000);

  it('accepts a delivery up to 300 s old or 300 s ahead by default', () => {
    for (const offset of [-300, -1, 0, 1, 300]) {
      expect(verify(ENVELOPE, { signature: sign(ENVELOPE), now: at(offset) }).type).toBe(
        'session.status.update',
      );
    }
  });

  it('refuses one older than the tolerance as stale_timestamp', () => {
    const error = refusal(() => verify(ENVELOPE, { signature: sign(ENVELOPE), now: at(301) }));
    expect(error).toMatchObject({ code: 'stale_timestamp' });
    expect(error.message).toContain('signed 301 s ago, more than the tolerance of 300 s');
  });

  it('refuses one further ahead than the tolerance as future_timestamp', () => {
    const error = refusal(() => verify(ENVELOPE, { signature: sign(ENVELOPE), now: at(-301) }));
    expect(error.code).toBe('future_timestamp');
  });

  it('takes another tolerance in seconds', () => {
    const run = (offset: number) => () =>
      verifyWebhook({
        rawBody: ENVELOPE,
        headers: headers(sign(ENVELOPE)),
        secret: SECRET,
        now: at(offset),
        toleranceSec: 10,
      });
    expect(run(10)().type).toBe('session.status.update');
    expect(refusal(run(11)).code).toBe('stale_timestamp');
    expect(refusal(run(-11)).code).toBe('future_timestamp');
  });

  it('a stale replay with a forged signature is bad_signature: the signature is checked first', () => {
    expect(refusal(() => verify(ENVELOPE, { signature: 'ab'.repeat(32), now: at(10_000) })).code).toBe(
      'bad_signature',
    );
  });

  it.each(['soon', '1788955200.5', '-1788955200', '0x6a9f', ''])(
    'a timestamp header %j is malformed_timestamp (or missing when empty)',
    (timestamp) => {
      const error = refusal(() => verify(ENVELOPE, { signature: sign(ENVELOPE), timestamp }));
      expect(error.code).toBe(timestamp === '' ? 'missing_timestamp' : 'malformed_timestamp');
    },
  );

  it('uses the real clock when no now is given', () => {
    const now = Math.floor(Date.now() / 1000);
    const event = verifyWebhook({
      rawBody: ENVELOPE,
      headers: headers(sign(ENVELOPE, now), now),
      secret: SECRET,
    });
    expect(event.type).toBe('session.status.update');
  });
});
