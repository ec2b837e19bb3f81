import { Eta } from 'eta';
import { projectPath } from '../core/project-files.js';
import { MAIL_KINDS, type MailData, type MailKind, type MailKindName } from './kinds.js';

const TEMPLATES = projectPath('src', 'mail', 'templates');
// The HTML part escapes every `<%= %>` (names people typed); the text part is plain text, escaped nowhere,
// and keeps its line ends as written (Eta's default trims the one after each tag, joining a link to the
// next line).
const html = new Eta({ views: TEMPLATES, autoEscape: true, cache: true });
const text = new Eta({ views: TEMPLATES, autoEscape: false, autoTrim: false, cache: true });

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

/** A mail of this kind, in text and HTML, with the installation's name and address. */
export function renderMail(
  kind: MailKindName,
  data: MailData,
  site: { installationName: string; publicUrl: string },
): RenderedMail {
  const it = { ...data, installationName: site.installationName, publicUrl: site.publicUrl };
  const mailKind: MailKind = MAIL_KINDS[kind];
  const subject = mailKind.subject(data, site.installationName);
  const template = mailKind.template ?? kind;
  return {
    subject,
    text: text.render(`./${template}-text`, it),
    html: html.render(`./${template}-html`, { ...it, subject }),
  };
}
