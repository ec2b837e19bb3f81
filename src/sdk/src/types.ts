// Methods are named in backticks, not {@link}ed: linking them would make this module import
// client.ts, which imports this one.
import type { components, operations } from './spec.js';

type Schemas = components['schemas'];

/**
 * The social network of a channel: `youtube`, `tiktok` or `sandbox`, or one added within v1 after
 * this version (the contract declares it extensible, so an unknown value is a string, not an error).
 */
export type Provider = KnownProvider | (string & {});

/** The providers this version of the contract knows. */
export type KnownProvider = Schemas['KnownProvider'];

/** The answer of `Service.isConnected`: the organization the credential acts for and its kind. */
export type ConnectionStatus = Schemas['ConnectionStatus'];

/** A social account connected to the organization. */
export type Channel = Schemas['Channel'];

/** The answer of `Service.channels`: `{ data: Channel[] }`. */
export type ChannelList = Schemas['ChannelList'];
/** `active`, `needs_reconnect` or `disabled`, or a status added within v1 after this version. */
export type ChannelStatus = Schemas['KnownChannelStatus'] | (string & {});

/**
 * What `Service.connectChannel` asks: the network (and a Mastodon account's `instance`), where the user
 * comes back to, and your `state`.
 */
export type ConnectChannelRequest = Schemas['ConnectChannelRequest'];

/** The answer of `Service.connectChannel`: the network's consent page to send the user to, and until when. */
export type ChannelConnection = Schemas['ChannelConnection'];

/** How many more posts a channel may publish in the current UTC day. */
export type ChannelQuota = Schemas['ChannelQuota'];

/** The answer of `Service.quota`: `{ data: ChannelQuota[] }`. */
export type ChannelQuotaList = Schemas['ChannelQuotaList'];

/**
 * Where a post is in its life: `draft`, `pending_approval`, `scheduled`, `publishing`, `published`,
 * `failed` or `skipped`, or a status added within v1 after this version.
 */
export type PostStatus = KnownPostStatus | (string & {});

/** The statuses this version of the contract knows. */
export type KnownPostStatus = Schemas['KnownPostStatus'];

/** Posts repeated by a recurrence rule (`Service.createSeries`); each occurrence is a post of its own. */
export type Series = Schemas['Series'];

/** The body of `Service.createSeries`: the rule, its time zone, the first occurrence and the posts. */
export type CreateSeriesRequest = Schemas['CreateSeriesRequest'];

/** The body of `Service.splitSeries`: from which occurrence on, and what changes. */
export type SplitSeriesRequest = Schemas['SplitSeriesRequest'];
/** A weekly posting slot of a channel: a weekday and a local `HH:MM` in the organization's time zone. */
export type ScheduleSlot = Schemas['ScheduleSlot'];

/** The answer of `Service.getChannelSchedule` and `Service.replaceChannelSchedule`. */
export type ChannelSchedule = Schemas['ChannelSchedule'];

/** An upcoming slot of a channel's queue and the queued post in it (`null` when free). */
export type QueueSlot = Schemas['QueueSlot'];

/** The answer of `Service.getChannelQueue`. */
export type ChannelQueue = Schemas['ChannelQueue'];

/** The query of `Service.getChannelQueue`: `limit` and `after`. */
export type ChannelQueueQuery = NonNullable<operations['getChannelQueue']['parameters']['query']>;

/** One post to one channel. */
export type Post = Schemas['Post'];

/** One page of posts: `{ data, nextCursor }`. */
export type PostPage = Schemas['PostPage'];

/** Why a post failed: a stable `code` to act on and a `message` for people. */
export type PostError = NonNullable<Schemas['PostError']>;

/** What happened to a post: `created`, `scheduled`, `publishing`, `retrying`, `published`, `failed`, … */
export type PostEventType = Schemas['PostEventType'];

/** One change of a post, as `Service.postHistory` lists it and the webhooks deliver it. */
export type PostEvent = Schemas['PostEvent'];

/** One page of a post's events, oldest first: `{ data, nextCursor }`. */
export type PostEventPage = Schemas['PostEventPage'];

/** The page of `Service.postHistory`: `limit` and `cursor`. */
export type PostHistoryQuery = NonNullable<operations['getPostHistory']['parameters']['query']>;

/** What happens to created posts: `schedule` (at `date`), `now` or `draft`. */
export type CreatePostType = CreatePostRequest['type'];

/**
 * The body of `Service.createPost`, discriminated by `type`: `schedule` requires `date`, `now` and
 * `draft` take it optionally; each in the single-content or the per-channel form.
 */
export type CreatePostRequest = Schemas['CreatePostRequest'];

/** `type: 'schedule'` with its `date`, in either form. */
export type CreateScheduledPost = Schemas['CreateScheduledPost'];

/** `type: 'now'` or `'draft'`, in either form. */
export type CreateUnscheduledPost = Schemas['CreateUnscheduledPost'];

/** The single-content form: the same `content` and `mediaIds` for every channel of `channelIds`. */
export type CreatePostSingleContent = Schemas['CreatePostSingleContent'];

/** The per-channel form: one item per channel in `posts`, each with its own settings. */
export type CreatePostPerChannel = Schemas['CreatePostPerChannel'];

/** One item of the per-channel form. */
export type PostItem = Schemas['PostItem'];

/** The answer of `Service.createPost`: the `group` id and the created posts, in request order. */
export type CreatePostResponse = Schemas['CreatePostResponse'];

/** The fields `Service.updatePost` changes; at least one. */
export type UpdatePostRequest = Schemas['UpdatePostRequest'];

/** The body of `Service.changePostStatus`: the status to move a post to, `draft` or `scheduled`. */
export type ChangePostStatusRequest = Schemas['ChangePostStatusRequest'];

/** The body of `Service.approvePost`: publish at the post's `scheduledAt` (the default) or `now`. */
export type ApprovePostRequest = Schemas['ApprovePostRequest'];

/** The body of `Service.rejectPost`: the comment for the post's author. */
export type RejectPostRequest = Schemas['RejectPostRequest'];

/** The body of `Service.schedulePost`: when to publish. */
export type SchedulePostRequest = Schemas['SchedulePostRequest'];

/** A file for `Service.importPosts`: a CSV file's text (`{ csv }`) or its rows as JSON (`{ rows }`). */
export type ImportPostsRequest = Schemas['ImportPostsRequest'];

/** One row of an import as JSON: the columns of the CSV form. */
export type ImportRow = Schemas['ImportRow'];

/** What `Service.importPosts` did, or a dry run would do, with each row. */
export type ImportReport = Schemas['ImportReport'];

/** One row of an {@link ImportReport}. */
export type ImportRowReport = Schemas['ImportRowReport'];

/** The format and filters of `Service.exportPosts`. */
export type PostExportQuery = NonNullable<operations['exportPosts']['parameters']['query']>;

/** The filters and page of `Service.listPosts`. */
export type PostFilters = NonNullable<operations['listPosts']['parameters']['query']>;

/** A part of a thread after the first, as a post item or an edit sends it (`PostItem.thread`). */
export type ThreadPartInput = Schemas['ThreadPartInput'];

/** A part of a thread after the first, as a post answers it, with where it was published (`Post.thread`). */
export type ThreadPart = Schemas['ThreadPart'];

/** Provider settings of a post item, told apart by `__type`. */
export type ProviderSettings = Schemas['ProviderSettings'];

/** How a video is published on YouTube (`__type: 'youtube'`). */
export type YouTubeSettings = Schemas['YouTubeSettings'];

/** How a video is posted to TikTok (`__type: 'tiktok'`); build it from the channel's creator info. */
export type TikTokSettings = Schemas['TikTokSettings'];

/** Settings of the built-in sandbox provider (`__type: 'sandbox'`), which publishes to a page of the server. */
export type SandboxSettings = Schemas['SandboxSettings'];

/** How a post is published on Bluesky (`__type: 'bluesky'`): its languages and link card. */
export type BlueskySettings = Schemas['BlueskySettings'];

/** How a status is published on Mastodon (`__type: 'mastodon'`): visibility, content warning, focal points. */
export type MastodonSettings = Schemas['MastodonSettings'];

/** How a post is published on X (`__type: 'x'`): who may reply. */
export type XSettings = Schemas['XSettings'];

/** How a post is published on a Facebook Page (`__type: 'facebook'`): a link shared with it. */
export type FacebookSettings = Schemas['FacebookSettings'];

/** How a post is published on Instagram (`__type: 'instagram'`): feed, reel or story, collaborators, tags. */
export type InstagramSettings = Schemas['InstagramSettings'];

/** How a post is published on Threads (`__type: 'threads'`): who may reply. */
export type ThreadsSettings = Schemas['ThreadsSettings'];

/** How a post is published on LinkedIn (`__type: 'linkedin'`): who may see it, and whether it may be reshared. */
export type LinkedInSettings = Schemas['LinkedInSettings'];
/** How a pin is published on Pinterest (`__type: 'pinterest'`): its board and section, title, link, a video's cover. */
export type PinterestSettings = Schemas['PinterestSettings'];

/** A post's first comment, as a post item or an edit sends it (`PostItem.firstComment`). */
export type FirstCommentInput = Schemas['FirstCommentInput'];

/** A post's first comment, as a post answers it, with where it was published (`Post.firstComment`). */
export type FirstComment = Schemas['FirstComment'];

/**
 * A post's settings as the server answers them (`Post.settings`): what was sent, with every optional
 * choice filled in with its default, so `tags`, the TikTok toggles, `outcome` and `failingPart` are always present.
 */
export type StoredProviderSettings = Schemas['StoredProviderSettings'];

/** Who can see a TikTok post. */
export type TikTokPrivacyLevel = Schemas['TikTokPrivacyLevel'];

/** An image, video or document (PDF) that posts can attach. */
export type Media = Schemas['Media'];

/** One page of media: `{ data, nextCursor }`. */
export type MediaPage = Schemas['MediaPage'];

/** The file types accepted as media (extensible: a type added later is another string). */
export type MediaContentType = Schemas['MediaContentType'];

/** The file types accepted as media that this version of the contract knows. */
export type KnownMediaContentType = Schemas['KnownMediaContentType'];

/** Whether media is an image, a video or a document (extensible: a kind added later is another string). */
export type MediaKind = Schemas['MediaKind'];

/** The page of `Service.listMedia`: `limit` and `cursor`. */
export type MediaListQuery = NonNullable<operations['listMedia']['parameters']['query']>;

/** The body of step 1 of `Service.upload`: the file's name, type and exact size. */
export type CreateUploadRequest = Schemas['CreateUploadRequest'];

/** Where and how to send the bytes of a signed upload (step 1 of `Service.upload`). */
export type Upload = Schemas['Upload'];

/** What a TikTok account allows right now; read it before every TikTok direct post. */
export type TikTokCreatorInfo = Schemas['TikTokCreatorInfo'];

/** One page of a Pinterest account's boards, each with its sections: `{ channelId, data, nextCursor }`. */
export type PinterestBoardList = Schemas['PinterestBoardList'];

/** A Pinterest board with its sections, what a pin's `boardId` and `boardSectionId` name. */
export type PinterestBoard = Schemas['PinterestBoard'];

/** The page of `Service.pinterestBoards`. */
export type PinterestBoardsQuery = NonNullable<operations['pinterestBoards']['parameters']['query']>;

/** TikTok account totals and one page of recent videos (`data`, with `nextCursor`). */
export type TikTokAnalytics = Schemas['TikTokAnalytics'];

/** One TikTok video with its counters. */
export type TikTokVideo = Schemas['TikTokVideo'];

/**
 * The period and page of `Service.tiktokAnalytics`: `days` (1–60, default 7), `limit` (1–20, default
 * 20) and `cursor`.
 */
export type TikTokAnalyticsQuery = NonNullable<operations['tiktokAnalytics']['parameters']['query']>;

/** A webhook endpoint of the organization (or of your OAuth app). */
export type Webhook = Schemas['Webhook'];

/** The answer of `Service.createWebhook`: the endpoint and its signing secret, shown this once. */
export type CreatedWebhook = Schemas['CreatedWebhook'];

/** The answer of `Service.listWebhooks`: `{ data: Webhook[] }`. */
export type WebhookList = Schemas['WebhookList'];

/** The body of `Service.createWebhook`: the URL, the event types, a description. */
export type CreateWebhookRequest = Schemas['CreateWebhookRequest'];

/** The body of `Service.updateWebhook`: any of the URL, event types, description and `enabled`. */
export type UpdateWebhookRequest = Schemas['UpdateWebhookRequest'];

/** The answer of `Service.rotateWebhookSecret`: the new secret, and until when the previous one still signs. */
export type WebhookSecret = Schemas['WebhookSecret'];

/** The type of a webhook event: `post.published`, `channel.needs_reconnect`, … (more may be added within v1). */
export type WebhookEventType = Schemas['WebhookEventType'];

/** One event for one endpoint, and how sending it went. */
export type WebhookDelivery = Schemas['WebhookDelivery'];

/** One page of an endpoint's deliveries, newest first: `{ data, nextCursor }`. */
export type WebhookDeliveryPage = Schemas['WebhookDeliveryPage'];

/** The page of `Service.webhookDeliveries`: `limit` and `cursor`. */
export type WebhookDeliveryQuery = NonNullable<operations['listWebhookDeliveries']['parameters']['query']>;

/** A post event a webhook delivers: the post as the API returns it right after the change. */
export type PostWebhookEvent = Schemas['PostWebhookEvent'];

/** A channel event a webhook delivers: the channel as the API returns it. */
export type ChannelWebhookEvent = Schemas['ChannelWebhookEvent'];

/** A channel whose access ends within a week unless a user connects it again, and when it ends. */
export type ChannelExpiringWebhookEvent = Schemas['ChannelExpiringWebhookEvent'];

/** The channel a `channel.expiring` event carries: the channel as the API returns it, with `accessEndsAt`. */
export type ExpiringChannel = Schemas['ExpiringChannel'];

/** The event the test operation sends. */
export type TestWebhookEvent = Schemas['TestWebhookEvent'];

/** Any event a webhook delivers, as `verifyWebhook` returns it; narrow it on `type`. */
export type WebhookEvent = PostWebhookEvent | ChannelWebhookEvent | ChannelExpiringWebhookEvent | TestWebhookEvent;

/** One problem of a failed request: the field (`posts[1].settings.privacyLevel`) and what is wrong with it. */
export type ErrorDetail = Schemas['ErrorDetail'];

/** The body of every non-2xx response of the Public API. */
export type ErrorBody = Schemas['Error'];
