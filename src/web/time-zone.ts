import type { Request, Response } from 'express';
import { IANAZone } from 'luxon';
import type { BrowserCookies } from '../pages/visitor.js';

/** The cookie that keeps the time zone a browser's user shows times in. */
const TIME_ZONE_COOKIE = 'tz';
const ONE_YEAR_S = 365 * 24 * 60 * 60;

export interface TimeZoneChoice {
  zone: string;
  /** `false` until the browser's zone (or the user's choice) is known: the page then shows UTC. */
  chosen: boolean;
  /** Whether the page's script should ask the browser for its zone and load the page again with it (a GET only). */
  ask: boolean;
}

/** A name the time-zone database knows (`Europe/Paris`, `UTC`); aliases such as `Asia/Calcutta` are accepted too. */
export function isTimeZone(value: unknown): value is string {
  return typeof value === 'string' && value.length <= 64 && IANAZone.isValidZone(value);
}

/**
 * The zone the pages show times in: the `tz` of the address (the browser's own, sent by the pages'
 * script on the first visit, or one the user picked), kept in a cookie for the next pages; else the
 * cookie's; else UTC until the script has told the browser's.
 */
export function readTimeZone(req: Request, res: Response, cookies: BrowserCookies): TimeZoneChoice {
  const asked = req.query.tz;
  if (isTimeZone(asked)) {
    if (cookies.read(req, TIME_ZONE_COOKIE) !== asked) cookies.set(res, TIME_ZONE_COOKIE, asked, ONE_YEAR_S);
    return { zone: asked, chosen: true, ask: false };
  }
  const kept = cookies.read(req, TIME_ZONE_COOKIE);
  if (isTimeZone(kept)) return { zone: kept, chosen: true, ask: false };
  return { zone: 'UTC', chosen: false, ask: req.method === 'GET' };
}

let zones: string[] | undefined;

/** The zones a user can pick from, with `current` among them even when it is an alias. */
export function timeZoneOptions(current: string): string[] {
  zones ??= ['UTC', ...Intl.supportedValuesOf('timeZone').filter((zone) => zone !== 'UTC')];
  return zones.includes(current) ? zones : [current, ...zones];
}
