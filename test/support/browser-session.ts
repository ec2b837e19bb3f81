import type { TestServer } from './server.js';

/** The value of a hidden or text input in a page, as the server rendered it (HTML entities decoded). */
export function inputValue(html: string, name: string): string | undefined {
  const match = new RegExp(`<input[^>]*name="${name}"[^>]*value="([^"]*)"`).exec(html);
  return match ? decodeEntities(match[1]!) : undefined;
}

export function decodeEntities(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

/**
 * A browser without the browser: keeps cookies, never follows redirects (tests look at them), and
 * sends forms the way a page would, with the CSRF token of the page they came from.
 */
export class BrowserSession {
  private readonly cookies = new Map<string, string>();

  constructor(
    private readonly server: TestServer,
    /** Sent with every request, e.g. the `X-Forwarded-For` of a proxy the server trusts. */
    private readonly headers: Record<string, string> = {},
  ) {}

  cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    for (const [name, value] of Object.entries(this.headers)) if (!headers.has(name)) headers.set(name, value);
    if (this.cookies.size > 0) headers.set('Cookie', this.cookieHeader());
    const response = await this.server.fetch(path, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const index = pair!.indexOf('=');
      const name = pair!.slice(0, index);
      const value = pair!.slice(index + 1);
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }

  get(path: string): Promise<Response> {
    return this.request(path);
  }

  postForm(path: string, fields: Record<string, string>): Promise<Response> {
    return this.request(path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  }

  /** Loads a page, then submits its form with the page's CSRF token and the given fields. */
  async submit(pagePath: string, action: string, fields: Record<string, string>): Promise<Response> {
    const page = await this.get(pagePath);
    const html = await page.text();
    const csrfToken = inputValue(html, 'csrf_token');
    if (!csrfToken) throw new Error(`no CSRF token on ${pagePath} (status ${page.status})`);
    return this.postForm(action, { csrf_token: csrfToken, ...fields });
  }

  async logIn(email: string, password: string, next?: string): Promise<Response> {
    const page = next ? `/login?next=${encodeURIComponent(next)}` : '/login';
    const response = await this.submit(page, '/login', { email, password, ...(next ? { next } : {}) });
    if (response.status !== 303) throw new Error(`log-in failed with ${response.status}`);
    return response;
  }
}
