import type { EnvReader } from './env-reader.js';

/** A Graph API version as Meta names it in its paths (`v23.0`). */
const GRAPH_VERSION = /^v\d{1,3}\.\d{1,2}$/;

/**
 * The operator's Meta app (developers.facebook.com), through which Facebook Pages and the Instagram
 * professional accounts linked to them are connected (Facebook Login for Business) and published to.
 */
export interface MetaConfig {
  appId: string;
  appSecret: string;
  /** The Graph API version every call names (`v23.0`): pinned, so Meta's changes arrive when the operator moves it. */
  graphVersion: string;
  /** Where the Graph API answers (https://graph.facebook.com). */
  graphUrl: string;
  /** Where Facebook's login dialog is (https://www.facebook.com). */
  dialogUrl: string;
  /** The Facebook Login for Business configuration whose permissions the dialog asks for, if the operator made one. */
  loginConfigId: string | undefined;
}

/** The operator's Threads app (a Meta app with the Threads use case). */
export interface ThreadsConfig {
  appId: string;
  appSecret: string;
  /** The Threads API version every call names (`v1.0`). */
  graphVersion: string;
  /** Where the Threads API answers, tokens included (https://graph.threads.net). */
  graphUrl: string;
  /** Threads's consent page (https://threads.net/oauth/authorize). */
  authorizeUrl: string;
}

/** The operator's app for Instagram accounts without a Facebook Page (Instagram API with Instagram Login). */
export interface InstagramLoginConfig {
  appId: string;
  appSecret: string;
  graphVersion: string;
  /** Instagram's consent page (https://www.instagram.com/oauth/authorize). */
  authorizeUrl: string;
  /** Where a code is traded for a token (https://api.instagram.com). */
  tokenUrl: string;
  /** Where the API answers (https://graph.instagram.com). */
  graphUrl: string;
}

function version(read: EnvReader, name: string, fallback: string): string {
  const value = read.text(name) || fallback;
  if (!GRAPH_VERSION.test(value)) read.problem(`${name} must be a version such as ${fallback}, got "${value}"`);
  return value;
}

function url(read: EnvReader, name: string, fallback: string): string {
  const value = (read.text(name) || fallback).replace(/\/+$/, '');
  const parsed = URL.parse(value);
  if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.search || parsed.hash)
    read.problem(`${name} must be an http(s) URL without a query, got "${value}"`);
  return value;
}

/** The operator's Meta app, when META_APP_ID and META_APP_SECRET are set. */
export function readMeta(read: EnvReader): MetaConfig | undefined {
  const app = read.pair('META_APP_ID', 'META_APP_SECRET', 'the Meta app of this server');
  const graphVersion = version(read, 'META_GRAPH_VERSION', 'v23.0');
  const graphUrl = read.origin('META_GRAPH_URL', 'https://graph.facebook.com');
  const dialogUrl = read.origin('META_DIALOG_URL', 'https://www.facebook.com');
  if (!app) return undefined;
  const [appId, appSecret] = app;
  return { appId, appSecret, graphVersion, graphUrl, dialogUrl, loginConfigId: read.text('META_LOGIN_CONFIG_ID') };
}

/** The operator's Threads app, when THREADS_APP_ID and THREADS_APP_SECRET are set. */
export function readThreads(read: EnvReader): ThreadsConfig | undefined {
  const app = read.pair('THREADS_APP_ID', 'THREADS_APP_SECRET', 'the Threads app of this server');
  const graphVersion = version(read, 'THREADS_API_VERSION', 'v1.0');
  const graphUrl = read.origin('THREADS_API_URL', 'https://graph.threads.net');
  const authorizeUrl = url(read, 'THREADS_AUTHORIZE_URL', 'https://threads.net/oauth/authorize');
  if (!app) return undefined;
  const [appId, appSecret] = app;
  return { appId, appSecret, graphVersion, graphUrl, authorizeUrl };
}

/** The operator's Instagram Login app, when INSTAGRAM_APP_ID and INSTAGRAM_APP_SECRET are set. */
export function readInstagramLogin(read: EnvReader): InstagramLoginConfig | undefined {
  const app = read.pair('INSTAGRAM_APP_ID', 'INSTAGRAM_APP_SECRET', 'the Instagram Login app of this server');
  const graphVersion = version(read, 'INSTAGRAM_API_VERSION', 'v23.0');
  const authorizeUrl = url(read, 'INSTAGRAM_AUTHORIZE_URL', 'https://www.instagram.com/oauth/authorize');
  const tokenUrl = read.origin('INSTAGRAM_TOKEN_URL', 'https://api.instagram.com');
  const graphUrl = read.origin('INSTAGRAM_API_URL', 'https://graph.instagram.com');
  if (!app) return undefined;
  const [appId, appSecret] = app;
  return { appId, appSecret, graphVersion, authorizeUrl, tokenUrl, graphUrl };
}
