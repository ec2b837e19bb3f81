import type { Config } from '../core/config.js';
import { contractScopes } from '../http/scopes.js';

/**
 * What an approved app can do on this server, in words for the consent page: everything its token
 * opens in the Public API, and no more. The networks the operator has not configured are left out,
 * since the app cannot connect or read them here.
 */
export function grantedAccess(config: Pick<Config, 'youtube' | 'tiktok'>, organization: string): string[] {
  const networks = [config.youtube ? 'YouTube' : undefined, config.tiktok ? 'TikTok' : undefined].filter(Boolean);
  return [
    `see the channels of ${organization} and their daily posting quota`,
    ...(networks.length > 0
      ? [
          `connect ${networks.join(' and ')} accounts to ${organization} ` +
            '(you sign in to the network yourself), and remove channels',
        ]
      : [`remove channels of ${organization}`]),
    `see every post of ${organization}, also those written here or through other apps, with what happened to each one`,
    'create, schedule, reschedule, edit, publish at once and delete posts on those channels',
    'upload media (from files, or from web addresses this server downloads), list it and delete it',
    `list, add, change and delete the webhooks of ${organization}: ` +
      'web addresses this server tells, with the post or channel concerned, ' +
      'when a post is scheduled, publishing, published, failed or deleted, ' +
      'or when a channel is connected or needs reconnecting',
    ...(config.tiktok
      ? [
          'read the creator information and the analytics ' +
            '(views, likes, comments and shares of recent videos) of its TikTok accounts',
        ]
      : []),
  ];
}

/**
 * What a token limited to `scopes` can do, in words for the consent page: each scope as the contract
 * describes it, with its name, so the page shows exactly what the app asked for and no more.
 */
export function scopedAccess(scopes: readonly string[]): string[] {
  const described = contractScopes();
  return scopes.map((scope) => {
    const meaning = (described.get(scope) ?? scope).replace(/\.$/, '');
    return `${meaning.charAt(0).toLowerCase()}${meaning.slice(1)} (${scope})`;
  });
}
