import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { buildEmail, messageIdOf } from '../../src/integrations/email.js';
import { createNotifier } from '../../src/integrations/index.js';
import { EVENTS, groupNotification, integration, notification, opts, outageGroup } from './helpers.js';
import { closedPort } from '../support/ports.js';

interface Mail {
  from: string;
  to: string[];
  raw: string;
}

const SMTP_PASSWORD = 'sm7p-Pa55word-xyz';

async function startSmtp(over: Partial<SMTPServerOptions> = {}): Promise<{ port: number; mails: Mail[]; server: SMTPServer }> {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        cb();
      });
    },
    ...over,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.server.address() as AddressInfo).port, mails, server };
}

const smtpError = (message: string, responseCode: number) => Object.assign(new Error(message), { responseCode });

/** Decodes one quoted-printable part body. */
function qp(s: string): string {
  const bytes = s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

/** The decoded body of the part with the given content type. */
function part(raw: string, contentType: string): string {
  const idx = raw.indexOf(`Content-Type: ${contentType}`);
  expect(idx, `part ${contentType}`).toBeGreaterThan(-1);
  const rest = raw.slice(idx);
  const headerEnd = rest.indexOf('\r\n\r\n');
  const headers = rest.slice(0, headerEnd);
  const boundary = /boundary="?([^";\r\n]+)"?/.exec(raw)?.[1];
  expect(boundary).toBeTruthy();
  const body = rest.slice(headerEnd + 4).split(`\r\n--${boundary}`)[0]!;
  if (/quoted-printable/i.test(headers)) return qp(body);
  if (/base64/i.test(headers)) return Buffer.from(body, 'base64').toString('utf8');
  return body;
}

function header(raw: string, name: string): string | undefined {
  const head = raw.slice(0, raw.indexOf('\r\n\r\n')).replace(/\r\n[ \t]+/g, ' ');
  return head
    .split('\r\n')
    .find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`))
    ?.slice(name.length + 1)
    .trim();
}

describe('EMAIL against smtp-server', () => {
  let smtp: Awaited<ReturnType<typeof startSmtp>> | undefined;
  let raw: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (smtp ? smtp.server.close(() => resolve()) : resolve()));
    smtp = undefined;
    await new Promise<void>((resolve) => (raw ? raw.close(() => resolve()) : resolve()));
    raw = undefined;
  });

  const mailInteg = (config: Record<string, unknown> = { to: ['ops@example.com', 'sec@example.com'] }) => integration('EMAIL', {}, config);
  const smtpUrl = (port: number) => `smtp://127.0.0.1:${port}`;

  it('sends text and HTML with subject, recipients and a Message-ID from the notification id', async () => {
    smtp = await startSmtp();
    const notifier = createNotifier('EMAIL', opts({ smtpUrl: smtpUrl(smtp.port), smtpFrom: 'certmgr@example.com' }));
    const r = await notifier.send(notification(mailInteg(), EVENTS['evt.healthstatus.certmgr-issuer.notready'], { id: 'dlv-42' }));
    expect(r).toEqual({ outcome: 'delivered', statusCode: 250 });
    expect(smtp.mails).toHaveLength(1);
    const m = smtp.mails[0]!;
    expect(m.from).toBe('certmgr@example.com');
    expect(m.to).toEqual(['ops@example.com', 'sec@example.com']);
    expect(header(m.raw, 'Subject')).toBe('[certmgr-notify] Issuer letsencrypt-prod in cluster prod is not ready');
    expect(header(m.raw, 'Message-ID')).toBe('<dlv-42@certmgr-notify>');
    expect(header(m.raw, 'Auto-Submitted')).toBe('auto-generated');
    expect(header(m.raw, 'X-Certmgr-Notify-Event-Type')).toBe('evt.healthstatus.certmgr-issuer.notready');
    expect(header(m.raw, 'Content-Type')).toMatch(/^multipart\/alternative/);
    const text = part(m.raw, 'text/plain');
    expect(text).toContain('Issuer letsencrypt-prod in cluster prod is not ready');
    expect(text).toContain('Reason: ErrUpdateACMEAccount');
    expect(text).toContain('Namespace: cert-manager');
    expect(text).toContain('notification dlv-42');
    const html = part(m.raw, 'text/html');
    expect(html).toContain('<h2 style="margin:0 0 12px 0;font-size:18px">Issuer letsencrypt-prod in cluster prod is not ready</h2>');
    expect(html).toContain('>ErrUpdateACMEAccount</td>');
  });

  it('sends a group notification (members listed) and a reminder (marked) through SMTP', async () => {
    smtp = await startSmtp();
    const notifier = createNotifier('EMAIL', opts({ smtpUrl: smtpUrl(smtp.port), smtpFrom: 'certmgr@example.com' }));
    expect((await notifier.send(groupNotification(mailInteg(), outageGroup(200, 3)))).outcome).toBe('delivered');
    expect(
      (
        await notifier.send(
          notification(mailInteg(), EVENTS['evt.healthstatus.certmgr-issuer.notready'], { id: 'dlv-rem', reminder: true }),
        )
      ).outcome,
    ).toBe('delivered');
    const [group, reminder] = smtp.mails;
    expect(header(group!.raw, 'Subject')).toBe(
      '[certmgr-notify] Issuer letsencrypt-prod in cluster prod: 200 certificates not ready, 3 recovered',
    );
    const text = part(group!.raw, 'text/plain').replace(/\r\n/g, '\n');
    expect(text).toContain('Not ready (200):\n- Certificate team-0/shop-0: IssuerNotReady\n');
    expect(text).toContain('and 190 more\nRecovered (3):\n- Certificate team-4/shop-200: was unhealthy for 0h15m0s');
    const html = part(group!.raw, 'text/html');
    expect(html).toContain('<li><b>Certificate team-2/shop-9</b>: IssuerNotReady</li>');
    expect(html).not.toContain('shop-10<');
    expect(header(reminder!.raw, 'Subject')).toBe('[certmgr-notify] Reminder: Issuer letsencrypt-prod in cluster prod is not ready');
    expect(part(reminder!.raw, 'text/plain')).toContain('Reminder: still not ready since 2026-03-01T10:00:00Z');
  });

  it('uses config.from over smtpFrom, and the same Message-ID on every attempt', async () => {
    smtp = await startSmtp();
    const notifier = createNotifier('EMAIL', opts({ smtpUrl: smtpUrl(smtp.port), smtpFrom: 'default@example.com' }));
    const n = notification(
      mailInteg({ to: ['a@example.com'], from: 'team@example.com' }),
      EVENTS['evt.policy.expiringcertificates.failed'],
    );
    await notifier.send(n);
    await notifier.send({ ...n, attempt: 2 });
    expect(smtp.mails.map((m) => m.from)).toEqual(['team@example.com', 'team@example.com']);
    expect(smtp.mails.map((m) => header(m.raw, 'Message-ID'))).toEqual([messageIdOf(n.id), messageIdOf(n.id)]);
    expect(header(smtp.mails[0]!.raw, 'Subject')).toBe('[certmgr-notify] Certificate expiring within 30 days: Certificate expiration');
  });

  it('a from outside the allowed sender domains (a row from before the check): dead, nothing reaches the relay', async () => {
    smtp = await startSmtp();
    const issuer = EVENTS['evt.healthstatus.certmgr-issuer.notready'];
    // no smtpSenderDomains: the domain of smtpFrom is the only one
    const byDefault = createNotifier('EMAIL', opts({ smtpUrl: smtpUrl(smtp.port), smtpFrom: 'certmgr@example.com' }));
    const r = await byDefault.send(notification(mailInteg({ to: ['ops@example.com'], from: 'payments@bank.test' }), issuer));
    expect(r).toEqual({
      outcome: 'dead',
      error: "config.from uses the sender domain bank.test, which this service's SMTP relay does not send for; allowed: example.com",
    });
    const listed = createNotifier(
      'EMAIL',
      opts({ smtpUrl: smtpUrl(smtp.port), smtpFrom: 'certmgr@example.com', smtpSenderDomains: ['*.example.org'] }),
    );
    const r2 = await listed.send(notification(mailInteg({ to: ['ops@example.com'], from: 'team@example.com' }), issuer));
    expect(r2).toMatchObject({ outcome: 'dead', error: expect.stringMatching(/sender domain example\.com.*allowed: \*\.example\.org$/) });
    expect(smtp.mails).toHaveLength(0);
    // within the list: sent, with that envelope sender
    expect((await listed.send(notification(mailInteg({ to: ['ops@example.com'], from: 'team@ops.example.org' }), issuer))).outcome).toBe(
      'delivered',
    );
    expect(smtp.mails.map((m) => m.from)).toEqual(['team@ops.example.org']);
  });

  it.each(['a@[127.0.0.1]', 'a@[IPv6:::1]', 'a@10.0.0.1', 'Ops <ops@example.com>'])(
    'a recipient %s (a row from before the check): dead, nothing reaches the relay',
    async (rcpt) => {
      smtp = await startSmtp();
      const notifier = createNotifier('EMAIL', opts({ smtpUrl: smtpUrl(smtp.port), smtpFrom: 'certmgr@example.com' }));
      const r = await notifier.send(
        notification(mailInteg({ to: ['ops@example.com', rcpt] }), EVENTS['evt.healthstatus.certmgr-issuer.notready']),
      );
      expect(r).toMatchObject({ outcome: 'dead', error: expect.stringMatching(/^config\.to\[1\] is not a plain email address: it /) });
      expect(smtp.mails).toHaveLength(0);
    },
  );

  it('escapes event text in the HTML body', async () => {
    smtp = await startSmtp();
    const data = { ...EVENTS['evt.healthstatus.certmgr-issuer.notready'].data, statusMessage: '<script>alert("x")</script> & more' };
    await createNotifier('EMAIL', opts({ smtpUrl: smtpUrl(smtp.port), smtpFrom: 'c@example.com' })).send(
      notification(mailInteg(), { type: 'evt.healthstatus.certmgr-issuer.notready', data }),
    );
    const html = part(smtp.mails[0]!.raw, 'text/html');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more');
    expect(part(smtp.mails[0]!.raw, 'text/plain')).toContain('<script>alert("x")</script> & more');
  });

  it.each([
    [
      'RCPT 450 (mailbox busy)',
      { onRcptTo: (_a: unknown, _s: unknown, cb: (e?: Error) => void) => cb(smtpError('Mailbox busy, try later', 450)) },
      'retry',
      450,
    ],
    [
      'RCPT 550 (no such user)',
      { onRcptTo: (_a: unknown, _s: unknown, cb: (e?: Error) => void) => cb(smtpError('No such user', 550)) },
      'dead',
      550,
    ],
    [
      'DATA 451 (local error)',
      {
        onData: (s: NodeJS.ReadableStream, _x: unknown, cb: (e?: Error) => void) => {
          s.on('end', () => cb(smtpError('Local error, try again', 451)));
          s.resume();
        },
      },
      'retry',
      451,
    ],
    [
      'DATA 554 (rejected)',
      {
        onData: (s: NodeJS.ReadableStream, _x: unknown, cb: (e?: Error) => void) => {
          s.on('end', () => cb(smtpError('Message rejected as spam', 554)));
          s.resume();
        },
      },
      'dead',
      554,
    ],
  ] as const)('%s -> %s', async (_name, handlers, outcome, code) => {
    smtp = await startSmtp(handlers as Partial<SMTPServerOptions>);
    const r = await createNotifier('EMAIL', opts({ smtpUrl: smtpUrl(smtp.port), smtpFrom: 'c@example.com' })).send(
      notification(mailInteg(), EVENTS['evt.healthstatus.certmgr-issuer.notready']),
    );
    expect(r.outcome).toBe(outcome);
    expect(r.statusCode).toBe(code);
    expect(r.error).toMatch(new RegExp(`^SMTP ${code}\\b`));
    expect(smtp.mails).toHaveLength(0);
  });

  it('reports a partial recipient rejection but delivers', async () => {
    smtp = await startSmtp({
      onRcptTo: (a, _s, cb) => (a.address.startsWith('sec@') ? cb(smtpError('No such user', 550)) : cb()),
    });
    const r = await createNotifier('EMAIL', opts({ smtpUrl: smtpUrl(smtp.port), smtpFrom: 'c@example.com' })).send(
      notification(mailInteg(), EVENTS['evt.healthstatus.certmgr-issuer.notready']),
    );
    expect(r).toEqual({ outcome: 'delivered', statusCode: 250, error: '1 of 2 recipients rejected' });
    expect(smtp.mails[0]!.to).toEqual(['ops@example.com']);
  });

  it('authenticates from the SMTP URL; a wrong password is dead and not echoed', async () => {
    smtp = await startSmtp({
      authMethods: ['PLAIN', 'LOGIN'],
      authOptional: false,
      onAuth: (auth, _s, cb) =>
        auth.username === 'mailer' && auth.password === SMTP_PASSWORD
          ? cb(null, { user: 'mailer' })
          : cb(smtpError('Invalid credentials', 535)),
    });
    const good = await createNotifier(
      'EMAIL',
      opts({ smtpUrl: `smtp://mailer:${SMTP_PASSWORD}@127.0.0.1:${smtp.port}`, smtpFrom: 'c@example.com' }),
    ).send(notification(mailInteg(), EVENTS['evt.healthstatus.certmgr-issuer.notready']));
    expect(good.outcome).toBe('delivered');
    const wrong = 'wr0ng-Pa55word-abc';
    const bad = await createNotifier(
      'EMAIL',
      opts({ smtpUrl: `smtp://mailer:${wrong}@127.0.0.1:${smtp.port}`, smtpFrom: 'c@example.com' }),
    ).send(notification(mailInteg(), EVENTS['evt.healthstatus.certmgr-issuer.notready']));
    expect(bad.outcome).toBe('dead');
    expect(bad.statusCode).toBe(535);
    expect(JSON.stringify(bad)).not.toContain(wrong);
    expect(smtp.mails).toHaveLength(1);
  });

  it('connection refused -> retry, without credentials in the error', async () => {
    const port = await closedPort();
    const r = await createNotifier(
      'EMAIL',
      opts({ smtpUrl: `smtp://mailer:${SMTP_PASSWORD}@127.0.0.1:${port}`, smtpFrom: 'c@example.com' }),
    ).send(notification(mailInteg(), EVENTS['evt.healthstatus.certmgr-issuer.notready']));
    expect(r.outcome).toBe('retry');
    expect(r.error).toBe('SMTP network error: connection refused (ECONNREFUSED)');
    expect(JSON.stringify(r)).not.toContain(SMTP_PASSWORD);
  });

  it('a server that never greets -> retry after the timeout', async () => {
    const sockets: Socket[] = [];
    raw = createServer((s) => sockets.push(s));
    await new Promise<void>((resolve) => raw!.listen(0, '127.0.0.1', resolve));
    const port = (raw.address() as AddressInfo).port;
    const r = await createNotifier('EMAIL', opts({ smtpUrl: smtpUrl(port), smtpFrom: 'c@example.com', timeoutMs: 300 })).send(
      notification(mailInteg(), EVENTS['evt.healthstatus.certmgr-issuer.notready']),
    );
    for (const s of sockets) s.destroy();
    expect(r.outcome).toBe('retry');
    expect(r.error).toMatch(/timed out/);
  });

  it('is dead with a clear message when SMTP, recipients or sender are missing', async () => {
    const n = notification(mailInteg(), EVENTS['evt.healthstatus.certmgr-issuer.notready']);
    expect(await createNotifier('EMAIL', opts()).send(n)).toEqual({
      outcome: 'dead',
      error: 'email is not configured: no SMTP URL (smtpUrl) is set',
    });
    for (const bad of ['not a url', 'http://mailer:pw-secret-1@mail.example.com/']) {
      const r = await createNotifier('EMAIL', opts({ smtpUrl: bad, smtpFrom: 'c@example.com' })).send(n);
      expect(r).toEqual({ outcome: 'dead', error: 'email is not configured: the SMTP URL is not a valid smtp:// or smtps:// URL' });
    }
    const port = await closedPort();
    expect(
      await createNotifier('EMAIL', opts({ smtpUrl: smtpUrl(port), smtpFrom: 'c@example.com' })).send({
        ...n,
        integration: mailInteg({ to: [] }),
      }),
    ).toEqual({
      outcome: 'dead',
      error: 'no recipients configured (config.to)',
    });
    expect(await createNotifier('EMAIL', opts({ smtpUrl: smtpUrl(port) })).send(n)).toEqual({
      outcome: 'dead',
      error: 'no sender configured (config.from or smtpFrom)',
    });
  });
});

describe('buildEmail', () => {
  it('renders each event type with the subject prefix', () => {
    for (const ev of Object.values(EVENTS)) {
      const c = buildEmail(notification(integration('EMAIL'), ev));
      expect(c.subject.startsWith('[certmgr-notify] ')).toBe(true);
      expect(c.text.length).toBeGreaterThan(20);
      expect(c.html).toContain('<table');
    }
  });
});
