import type { EnvReader } from './env-reader.js';

/** Mail to people (password resets, address verifications): where it goes out, and in whose name. */
export interface MailConfig {
  /**
   * The SMTP server, `smtp://` (STARTTLS when the server offers it; `?requireTLS=true` insists on it) or
   * `smtps://` (TLS from the first byte), with `user:password@` when it asks for them. Without it no mail
   * is sent: each is logged without its links, and the admin CLI does what a mail would.
   */
  smtpUrl: string | undefined;
  /** The sender of every mail, an address or `Name <address>`. */
  from: string;
  /** What the installation calls itself in mail (subjects, greetings, signatures). */
  installationName: string;
}

const ADDRESS = /^[^\s@<>]+@[^\s@<>]+$/;

export function readMail(read: EnvReader, publicUrl: string): MailConfig {
  const smtpUrl = read.text('SMTP_URL')?.trim();
  if (smtpUrl !== undefined) {
    let protocol: string | undefined;
    try {
      protocol = new URL(smtpUrl).protocol;
    } catch {
      protocol = undefined;
    }
    // The URL may hold a password: the problem names the variable, never its value.
    if (protocol !== 'smtp:' && protocol !== 'smtps:') read.problem('SMTP_URL must be an smtp:// or smtps:// URL');
  }
  const installationName = (read.text('INSTALLATION_NAME') ?? 'Post Scheduler').trim();
  if (installationName.length < 1 || installationName.length > 60 || /[\r\n]/.test(installationName)) {
    read.problem(`INSTALLATION_NAME must be 1 to 60 characters on one line, got "${installationName}"`);
  }
  const from = read.text('MAIL_FROM')?.trim() ?? `${installationName} <no-reply@${hostOf(publicUrl)}>`;
  const address = /<([^>]*)>\s*$/.exec(from)?.[1] ?? from;
  if (!ADDRESS.test(address) || /[\r\n]/.test(from)) {
    read.problem(`MAIL_FROM must be an email address or "Name <address>", got "${from}"`);
  }
  return { smtpUrl, from, installationName };
}

/** The host of PUBLIC_URL for the default sender; `localhost` while PUBLIC_URL is not valid (reported apart). */
function hostOf(publicUrl: string): string {
  try {
    return new URL(publicUrl).hostname || 'localhost';
  } catch {
    return 'localhost';
  }
}
