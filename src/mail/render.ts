import { Eta } from 'eta';
import { projectPath } from '../core/project-files.js';
import { MAIL_KINDS, type MailData, type MailKindName } from './kinds.js';

const TEMPLATES = projectPath('src', 'mail', 'templates');
// The HTML part escapes every `<%= %>` (names people typed); the text part is plain text, escaped nowhere.
const html = new Eta({ views: TEMPLATES, autoEscape: true, cache: true });
const text = new Eta({ views: TEMPLATES, autoEscape: false, cache: true });

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
  const subject = MAIL_KINDS[kind].subject(data, site.installationName);
  return {
    subject,
    text: text.render(`./${kind}-text`, it),
    html: html.render(`./${kind}-html`, { ...it, subject }),
  };
}
