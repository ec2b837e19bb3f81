import type { ErrorDetail } from '../core/errors.js';
import { inReadersZone } from './time-zone.js';

/**
 * What a setting a network requires is called when it is missing: "YouTube needs a privacy setting".
 * The contract's `required` lists name them; a setting not listed here is called by its field's label.
 */
const NEEDED_SETTINGS: Record<string, string> = {
  title: 'a title',
  privacyStatus: 'a privacy setting',
  madeForKids: 'an answer to “Made for kids?”',
  postMode: 'a post mode',
  privacyLevel: 'a choice of who can see the video',
  boardId: 'a board',
};

/** What a pattern of the contract asks for, in words; a pattern not listed here is "not in the expected form". */
const PATTERN_WORDS: Record<string, string> = {
  '^[^<>]*$': 'cannot contain < or >',
  '^[a-z]{2,3}$': 'needs a language code of two or three small letters, such as en',
  '^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$': 'needs language codes such as en or pt-BR',
  '^[A-Za-z0-9._]+$': 'may hold only letters, digits, full stops and underscores',
};

/**
 * A problem the contract's check found, in the words of the people using the composer rather than the
 * validator's (which the Public API keeps, as integrators read them): "Choose at least one channel"
 * for "must NOT have fewer than 1 items" at `posts`, "YouTube needs a privacy setting" for "must have
 * required property 'privacyStatus'" in a YouTube post's settings. `network` names the network of the
 * post a path is in. Messages of the domain's rules are already written for people and are kept, with
 * their times in the reader's `zone`.
 */
export function inPeoplesWords(
  detail: ErrorDetail,
  network: (path: string) => string | undefined,
  zone: string,
): ErrorDetail {
  const { path, message } = detail;
  const past = /^is more than 1 minute in the past \(it is (.+) now\)$/.exec(message);
  if (past) return { path, message: `This time has passed: it is ${inReadersZone(past[1]!, zone)} now.` };
  const rest = path.replace(/^posts\[\d+\]\.?/, '');
  const required = /^must have required property '(.+)'$/.exec(message);
  if (path === 'posts' || path === 'channelIds') {
    if (/^must NOT have fewer than 1 items$/.test(message)) return { path, message: 'Choose at least one channel.' };
  }
  // A tag's place is a share of the image's width and height; the form writes it in percent.
  if (/userTags\[\d+\]\.[xy]$/.test(rest) && /^must be [<>]=/.test(message))
    return { path, message: 'A tag is placed within the image: from 0 to 100 percent from its left and from its top.' };
  if (/userTags\[\d+\]\.username$/.test(rest) && /^must match pattern/.test(message))
    return { path, message: 'A username may hold only letters, digits, full stops and underscores.' };
  if (required && (rest === 'date' || path === 'date'))
    return { path, message: 'Choose a day and a time to publish at.' };
  // A setting left empty is one missing, as a person sees the field.
  const empty = message === 'must NOT have fewer than 1 characters' && NEEDED_SETTINGS[rest.split('.').at(-1)!];
  if ((required || empty) && rest.startsWith('settings')) {
    const setting = rest.split('.').at(-1)!;
    const name = network(path) ?? 'This network';
    return { path, message: `${name} needs ${NEEDED_SETTINGS[setting] ?? 'this setting'}.` };
  }
  const plain = plainWords(message);
  return { path, message: plain === undefined ? inReadersZone(message, zone) : sentence(plain) };
}

/** The validator's phrases (Ajv's, as express-openapi-validator words them) in plain words. */
function plainWords(message: string): string | undefined {
  let m: RegExpExecArray | null;
  if ((m = /^must NOT have more than (\d+) characters$/.exec(message)))
    return `is too long: at most ${m[1]} characters`;
  if ((m = /^must NOT have fewer than (\d+) characters$/.exec(message)))
    return m[1] === '1' ? 'cannot be empty' : `is too short: at least ${m[1]} characters`;
  if ((m = /^must NOT have more than (\d+) items$/.exec(message))) return `has too many: at most ${m[1]}`;
  if ((m = /^must NOT have fewer than (\d+) items$/.exec(message))) return `needs at least ${m[1]}`;
  if ((m = /^must be >= (\S+)$/.exec(message))) return `must be at least ${m[1]}`;
  if ((m = /^must be <= (\S+)$/.exec(message))) return `must be at most ${m[1]}`;
  if ((m = /^must match pattern "(.+)"$/.exec(message))) return PATTERN_WORDS[m[1]!] ?? 'is not in the expected form';
  if (/^must be equal to one of the allowed values$/.test(message)) return 'is not one of the choices offered';
  if (/^must match format "date-time"$/.test(message)) return 'is not a day and time';
  if ((m = /^must have required property '(.+)'$/.exec(message))) return `needs ${m[1]}`;
  if (/^must NOT have additional properties$/.test(message)) return 'is not taken here';
  if (/^must (be|match) /.test(message)) return 'is not valid';
  return undefined;
}

/** A message as a sentence: its first letter a capital, a full stop at its end. */
function sentence(text: string): string {
  const capital = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.!?)]$/.test(capital) ? capital : `${capital}.`;
}
