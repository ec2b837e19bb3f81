import type { CsrfTokens } from '../pages/csrf.js';
import type { BrowserCookies } from '../pages/visitor.js';

/** What the web app's pages share to read and answer a visitor: the browser's cookies and the forms' CSRF tokens. */
export interface PageTools {
  cookies: BrowserCookies;
  csrf: CsrfTokens;
}
