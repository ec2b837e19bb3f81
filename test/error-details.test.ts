import { describe, expect, it } from 'vitest';
import { detailPath, violationDetails } from '../src/http/error-envelope.js';

const v = (path: string, message: string, keyword: string) => ({
  path,
  message,
  errorCode: `${keyword}.openapi.validation`,
});

describe('validation details', () => {
  it('name the field in the body or the query', () => {
    expect(detailPath('/body/posts/1/settings/privacyLevel')).toBe('posts[1].settings.privacyLevel');
    expect(detailPath('/query/limit')).toBe('query.limit');
    expect(detailPath('/body')).toBe('body');
  });

  it('keep the intended form’s problems and drop the complaints of the other forms of a oneOf', () => {
    // A single-content body of type "schedule" without a date, as Ajv reports it against both forms.
    const details = violationDetails([
      v('/body/date', "must have required property 'date'", 'required'),
      v('/body', 'must match "then" schema', 'if'),
      v('/body/date', "must have required property 'date'", 'required'),
      v('/body', 'must match "then" schema', 'if'),
      v('/body/posts', "must have required property 'posts'", 'required'),
      v('/body/content', 'must NOT have additional properties', 'additionalProperties'),
      v('/body/channelIds', 'must NOT have additional properties', 'additionalProperties'),
      v('/body', 'must match exactly one schema in oneOf', 'oneOf'),
    ]);
    expect(details).toEqual([{ path: 'date', message: "must have required property 'date'" }]);
  });

  it('say which properties would make a form when the body matches none', () => {
    const details = violationDetails([
      v('/body/channelIds', "must have required property 'channelIds'", 'required'),
      v('/body/posts', "must have required property 'posts'", 'required'),
      v('/body/content', 'must NOT have additional properties', 'additionalProperties'),
      v('/body', 'must match exactly one schema in oneOf', 'oneOf'),
    ]);
    expect(details).toEqual([
      { path: 'channelIds', message: "must have required property 'channelIds'" },
      { path: 'posts', message: "must have required property 'posts'" },
    ]);
  });

  it('keep at most 20 details', () => {
    const many = Array.from({ length: 50 }, (_, i) => v(`/body/posts/${i}/channelId`, 'must be string', 'type'));
    expect(violationDetails(many)).toHaveLength(20);
  });
});
