import type { Request, Response } from 'express';
import { renderPage } from '../pages/render.js';
import { field } from '../pages/visitor.js';

export interface Confirmation {
  /** The page's title and question: "Delete photo.png?". */
  question: string;
  /** What doing it means, said before it is done. */
  consequence: string;
  /** The words of the button that does it: "Delete the media". */
  button: string;
  /** Where Cancel goes back to. */
  back: string;
  /** The navigation entry the page belongs to. */
  path: string;
  /** The form's fields to send again with the confirmation (the posts ticked for a bulk action). */
  fields?: [name: string, value: string][];
}

/**
 * Whether a form that cannot be undone (delete media, remove a channel, revoke a key) was confirmed.
 * When it was not, the answer is a page asking to confirm, whose form posts the same action again with
 * `confirm=yes`: it works without a script, and the list's button is one click away from it.
 */
export function confirmedOrAsk(req: Request, res: Response, confirmation: Confirmation): boolean {
  if (field(req, 'confirm') === 'yes') return true;
  renderPage(res, '/web/templates/confirm', {
    title: confirmation.question,
    path: confirmation.path,
    confirmation,
    action: req.originalUrl,
  });
  return false;
}
