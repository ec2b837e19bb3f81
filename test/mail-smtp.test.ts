import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/core/config.js';
import { createLogger } from '../src/core/logger.js';
import { createMailSender } from '../src/mail/sender.js';
import { makeCertificate, type Certificate } from './support/certificate.js';
import { startSmtpSink, type SmtpSink } from './support/smtp-sink.js';

// The SMTP transport as SMTP_URL says: STARTTLS on smtp:// (insisted on with requireTLS), TLS from the first
// byte on smtps://, the server's certificate checked (here against the test's own CA, given in the URL).
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'post-scheduler-smtp-'));
let certificate: Certificate;
const sinks: SmtpSink[] = [];
const logger = createLogger({ logLevel: 'silent' });

beforeAll(() => {
  certificate = makeCertificate(dir, 'mail.example.test');
});
afterAll(async () => {
  await Promise.all(sinks.map((sink) => sink.close()));
  fs.rmSync(dir, { recursive: true, force: true });
});

async function sink(options: { secure?: boolean; startTls?: boolean }): Promise<SmtpSink> {
  const started = await startSmtpSink({
    secure: options.secure ?? false,
    key: fs.readFileSync(certificate.keyPath),
    cert: certificate.cert,
    disabledCommands: options.startTls === false ? ['STARTTLS'] : [],
  });
  sinks.push(started);
  return started;
}

const trusting = (url: string) =>
  `${url}?tls.servername=mail.example.test&tls.ca=${encodeURIComponent(certificate.cert)}`;

async function send(smtpUrl: string, to: string): Promise<void> {
  const sender = createMailSender(loadConfig({ SMTP_URL: smtpUrl, MAIL_FROM: 'robot@example.test' }).mail, logger);
  try {
    await sender.send({ to, kind: 'test', subject: 'Hello', text: 'Hello', html: '<p>Hello</p>' });
  } finally {
    sender.close();
  }
}

describe('the SMTP transport', () => {
  it('upgrades smtp:// with STARTTLS when the server offers it', async () => {
    const server = await sink({});
    await send(trusting(server.url), 'starttls@example.test');
    expect((await server.next('starttls@example.test')).secure).toBe(true);
  });

  it('speaks TLS from the first byte on smtps://', async () => {
    const server = await sink({ secure: true });
    await send(trusting(server.url), 'tls@example.test');
    expect((await server.next('tls@example.test')).secure).toBe(true);
  });

  it('refuses to send in the clear when the URL requires TLS and the server offers none', async () => {
    const server = await sink({ startTls: false });
    await expect(send(`${trusting(server.url)}&requireTLS=true`, 'clear@example.test')).rejects.toThrow();
    expect(server.received).toEqual([]);
  });

  it('refuses a server whose certificate it cannot check', async () => {
    const server = await sink({ secure: true });
    await expect(send(server.url, 'untrusted@example.test')).rejects.toThrow(/certificate/);
    expect(server.received).toEqual([]);
  });
});
