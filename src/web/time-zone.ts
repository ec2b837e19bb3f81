import type { Request, RequestHandler, Response } from 'express';
import { IANAZone } from 'luxon';
import { formatTime } from '../pages/forms.js';
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

/**
 * The time-zone database's current names of the zones whose old names the browsers' list (CLDR's)
 * still gives: the picker offers, and the pages keep, the names people know (IANA tz `backward`).
 */
const CURRENT_NAMES: Record<string, string> = {
  'Africa/Asmera': 'Africa/Asmara',
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Cordoba': 'America/Argentina/Cordoba',
  'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis',
  'America/Jujuy': 'America/Argentina/Jujuy',
  'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Europe/Kiev': 'Europe/Kyiv',
  'Pacific/Enderbury': 'Pacific/Kanton',
  'Pacific/Ponape': 'Pacific/Pohnpei',
  'Pacific/Truk': 'Pacific/Chuuk',
};

/** A zone by its current name (`Asia/Calcutta` is `Asia/Kolkata`). */
export const currentZoneName = (zone: string): string => CURRENT_NAMES[zone] ?? zone;

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
    const zone = currentZoneName(asked);
    if (cookies.read(req, TIME_ZONE_COOKIE) !== zone) cookies.set(res, TIME_ZONE_COOKIE, zone, ONE_YEAR_S);
    return { zone, chosen: true, ask: false };
  }
  const kept = cookies.read(req, TIME_ZONE_COOKIE);
  if (isTimeZone(kept)) return { zone: currentZoneName(kept), chosen: true, ask: false };
  return { zone: 'UTC', chosen: false, ask: req.method === 'GET' };
}

const READER_ZONE = 'readerZone';

/** Reads the reader's zone once for the pages below it, which show times with `zoneOf(res)`. */
export function readerZone(cookies: BrowserCookies): RequestHandler {
  return (req, res, next) => {
    res.locals[READER_ZONE] = readTimeZone(req, res, cookies).zone;
    next();
  };
}

/** The zone `readerZone` read for this request; UTC where it did not run. */
export const zoneOf = (res: Response): string => {
  const zone: unknown = res.locals[READER_ZONE];
  return typeof zone === 'string' ? zone : 'UTC';
};

/**
 * A message of the domain's rules (written for the API, in UTC: "it is 2030-03-13T12:00:00.000Z now")
 * with each instant in it as the pages show times, in the reader's zone.
 */
export function inReadersZone(message: string, zone: string): string {
  return message.replace(/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?Z\b/g, (instant) =>
    formatTime(new Date(instant), zone),
  );
}

let zones: string[] | undefined;

/** The zones a user can pick from, by their current names, with `current` among them even when it is an alias. */
export function timeZoneOptions(current: string): string[] {
  zones ??= [
    'UTC',
    ...new Set(
      Intl.supportedValuesOf('timeZone')
        .filter((zone) => zone !== 'UTC')
        .map(currentZoneName),
    ),
  ].sort((a, b) => (a === 'UTC' ? -1 : b === 'UTC' ? 1 : a.localeCompare(b)));
  return zones.includes(current) ? zones : [current, ...zones];
}
