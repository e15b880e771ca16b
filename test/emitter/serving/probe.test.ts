/** The probe's pure parts: addresses, and failures in one line. */
import { describe, expect, it } from 'vitest';
import { describeProbeError, parseAddress } from '../../../src/emitter/serving/probe.js';

describe('parseAddress', () => {
  it.each([
    ['10.0.0.1:443', { host: '10.0.0.1', port: 443 }],
    ['lb.example.com:8443', { host: 'lb.example.com', port: 8443 }],
    ['[2001:db8::1]:443', { host: '2001:db8::1', port: 443 }],
    ['[::ffff:10.0.0.1]:1', { host: '::ffff:10.0.0.1', port: 1 }],
    ['lb.example.com', undefined],
    ['2001:db8::1:443', undefined],
    ['[lb.example.com]:443', undefined],
    ['[2001:db8::zz]:443', undefined],
    ['10.0.0.1:0', undefined],
    ['10.0.0.1:65536', undefined],
    ['10.0.0.1:', undefined],
    ['a b:443', undefined],
    ['https://a:443', undefined],
    ['', undefined],
  ])('%j → %j', (address, want) => expect(parseAddress(address)).toEqual(want));
});

describe('describeProbeError', () => {
  const err = (code: string, message = `${code} message`, reason?: string) => Object.assign(new Error(message), { code, reason });
  it.each([
    [err('ECONNREFUSED'), false, 'connection refused'],
    [err('EHOSTUNREACH'), false, 'host unreachable'],
    [err('ENOTFOUND'), false, 'name not found (DNS)'],
    // after the TCP connection a reset is the server cutting the handshake
    [
      err('ECONNRESET', 'Client network socket disconnected before secure TLS connection was established'),
      true,
      'TLS handshake failed: connection reset',
    ],
    [
      err('ERR_SSL_WRONG_VERSION_NUMBER', 'ssl3_get_record:wrong version number', 'wrong version number'),
      true,
      'TLS handshake failed: wrong version number',
    ],
    [err('ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE', 'alert\nhandshake   failure'), true, 'TLS handshake failed: alert handshake failure'],
    [new Error('something\r\nodd'), true, 'TLS handshake failed: something odd'],
    ['a string', true, 'TLS handshake failed: a string'],
  ])('%s (connected %s) → %j', (e, connected, want) => expect(describeProbeError(e, connected)).toBe(want));

  it('is cut to the reason limit', () => {
    expect([...describeProbeError(new Error('x'.repeat(2000)), true)]).toHaveLength(512);
  });
});
