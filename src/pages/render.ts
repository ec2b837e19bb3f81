import { Eta } from 'eta';
import type { RequestHandler, Response } from 'express';
import { projectPath } from '../core/project-files.js';
import { can, type Permission } from '../core/roles.js';
import { visitorOf, type Visitor } from './visitor.js';

// Templates are named by their path in src/ (`/oauth/templates/consent`): each feature keeps its own.
const TEMPLATES_DIR = projectPath('src');
export const ASSETS_DIR = projectPath('src', 'pages', 'assets');

// autoEscape: every `<%= %>` is HTML-escaped, so names and descriptions typed by app developers
// cannot become markup on the consent page. Raw output (`<%~ %>`) is used only for rendered templates.
const eta = new Eta({ views: TEMPLATES_DIR, autoEscape: true, cache: true });

export interface PagePolicy {
  /** Origins a form submission may end up at besides this site (an app's redirect URL after consent). */
  formOrigins?: string[];
  /** Origins images and videos may come from besides this site (media in an S3-compatible bucket). */
  mediaOrigins?: string[];
  /**
   * Origins the page's script may send requests to: this site, and these (an S3-compatible bucket
   * that takes uploads). Absent, the page's script connects nowhere.
   */
  connectOrigins?: string[];
}

/**
 * Pages load nothing from elsewhere (no third-party scripts, styles, fonts or images: apps' pictures
 * are served from this site), cannot be framed (clickjacking of the consent page, RFC 6819 §4.4.1.9),
 * leak no URL in a Referer and are never cached.
 */
export function contentSecurityPolicy(policy: PagePolicy = {}): string {
  const forms = ["'self'", ...(policy.formOrigins ?? [])].join(' ');
  const media = ["'self'", ...(policy.mediaOrigins ?? [])].join(' ');
  return [
    "default-src 'none'",
    "style-src 'self'",
    "script-src 'self'",
    `img-src ${media}`,
    ...(policy.mediaOrigins ? [`media-src ${media}`] : []),
    ...(policy.connectOrigins ? [`connect-src ${["'self'", ...policy.connectOrigins].join(' ')}`] : []),
    `form-action ${forms}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

function setPageHeaders(res: Response, policy?: PagePolicy): void {
  res.setHeader('Content-Security-Policy', contentSecurityPolicy(policy));
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Cache-Control', 'no-store');
}

export function securityHeaders(): RequestHandler {
  return (_req, res, next) => {
    setPageHeaders(res);
    next();
  };
}

export interface PageData {
  title: string;
  visitor?: Visitor | undefined;
  /** The path of the page, for the navigation and the organization switcher's way back. */
  path?: string;
  [name: string]: unknown;
}

/**
 * The HTML of a page, for a handler that answers it (a typed operation's `html`): sets the headers
 * above on the response, also when the page answers an error that no middleware saw coming.
 * `template` is the template's path in src/, e.g. `/oauth/templates/consent`.
 */
export function pageHtml(res: Response, template: string, data: PageData, policy?: PagePolicy): string {
  setPageHeaders(res, policy);
  const visitor = visitorOf(res);
  // What the visitor's role lets them do in the organization they act for: pages hide the rest.
  const allowed = (permission: Permission) =>
    visitor?.organization !== undefined && can(visitor.organization.role, permission);
  return eta.render(template, { visitor, path: '/', can: allowed, ...data });
}

/** Writes a page with the headers above. */
export function renderPage(res: Response, template: string, data: PageData, status = 200, policy?: PagePolicy): void {
  const html = pageHtml(res, template, data, policy);
  res.status(status).type('html').send(html);
}

/** The HTML of a page that explains what went wrong and links somewhere useful; never a stack trace. */
export function errorPageHtml(res: Response, title: string, message: string): string {
  return pageHtml(res, ERROR_TEMPLATE, { title, message });
}

const ERROR_TEMPLATE = '/pages/templates/error';

/** Writes a page that explains what went wrong and links somewhere useful; never a stack trace. */
export function renderErrorPage(res: Response, status: number, title: string, message: string): void {
  renderPage(res, ERROR_TEMPLATE, { title, message }, status);
}

/** A form whose CSRF token does not match this browser's session (or pre-session cookie). */
export function formExpired(res: Response): void {
  renderErrorPage(
    res,
    403,
    'This form has expired',
    'The form was not sent from this page of the site, or your session changed since it was shown. ' +
      'Go back, reload the page and try again.',
  );
}
